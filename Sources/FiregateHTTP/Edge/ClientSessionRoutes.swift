import FiregateBackend
import FiregateEdge
import FiregateModel
import Hummingbird

/// The client calls beside tree reads and writes: `/onDisconnect`, `/keepSynced`,
/// `/transaction` and `/auth` (entries of `ClientRoutes.subroutes`).
enum ClientSessionRoutes {
    static let subroutes: [ClientSubroute] = [
        ClientSubroute(.post, "/onDisconnect") { call throws(FiregateError) in
            let tree = try await call.client.treeAccess()
            let body = try await call.request.jsonObjectBody()
            guard let op = body["op"]?.stringValue else { throw .invalidArgument("op must be \"set\", \"update\" or \"remove\".") }
            return JSONResponse.make(try await tree.addOnDisconnect(path: try path(body["path"]), op: op, value: body["value"]))
        },
        ClientSubroute(.delete, "/onDisconnect") { call throws(FiregateError) in
            let tree = try await call.client.treeAccess()
            let location = try path(try QueryParameters(call.request).first("path").map(JSON.string) ?? .string("/"))
            return JSONResponse.make(["cancelled": .int(Int64(await tree.cancelOnDisconnect(path: location)))])
        },
        ClientSubroute(.post, "/keepSynced") { call throws(FiregateError) in
            let tree = try await call.client.treeAccess()
            let body = try await call.request.jsonObjectBody()
            guard let enabled = body["enabled"]?.boolValue else { throw .invalidArgument("enabled must be a boolean.") }
            var parameters: [String: String] = [:]
            if case .object(let members)? = body["query"] {
                for (name, value) in members { parameters[name] = value.stringValue ?? String(decoding: JSONWriter.bytes(value), as: UTF8.self) }
            }
            let location = try path(body["path"])
            try await tree.keepSynced(TreeViewKey(path: location, query: try TreeQueryParser.parse(parameters), parameters: parameters), enabled)
            return JSONResponse.make(["path": .string(location.description), "enabled": .bool(enabled)])
        },
        ClientSubroute(.post, "/transaction") { call throws(FiregateError) in try await transaction(call) },
        ClientSubroute(.put, "/auth") { call throws(FiregateError) in
            JSONResponse.make(try await call.client.setAuth(try await call.request.jsonObjectBody()))
        },
        ClientSubroute(.get, "/auth") { call in JSONResponse.make(await call.client.authJSON) },
    ]

    /// POST /clients/{id}/transaction: a declarative tree transaction; `waitFor=ack` answers
    /// with the server's outcome.
    private static func transaction(_ call: ClientCall) async throws(FiregateError) -> Response {
        let tree = try await call.client.treeAccess()
        let body = try await call.request.jsonObjectBody()
        let receipt = try await tree.write(.transaction(try path(body["path"]), body))
        guard let id = receipt.id else {
            return JSONResponse.make(["committed": false, "value": receipt.value.json], headers: [ClientTreeRoutes.writeStateHeader: "acknowledged"])
        }
        guard try QueryParameters(call.request).first("waitFor") == "ack" else {
            return JSONResponse.make(["committed": true, "value": receipt.value.json],
                                     headers: [ClientTreeRoutes.writeIDHeader: "t\(id)", ClientTreeRoutes.writeStateHeader: "pending"])
        }
        switch await tree.outcome(of: id) {
        case .acknowledged(let answer):
            return JSONResponse.make(answer, headers: [ClientTreeRoutes.writeIDHeader: "t\(id)", ClientTreeRoutes.writeStateHeader: "acknowledged"])
        case .rejected(let error): throw error
        case .pending: throw FiregateError(.internal, "The transaction ended without an outcome.")
        }
    }

    /// A tree location given in a body: a string such as "users/u1" or "/users/u1".
    static func path(_ json: JSON?) throws(FiregateError) -> TreePath {
        guard let text = json?.stringValue else { throw .invalidArgument("path must be a string such as \"users/u1\".") }
        if text == "/.info" || text.hasPrefix("/.info/") || text == ".info" || text.hasPrefix(".info/") {
            throw .invalidArgument("Can't modify data under /.info/")
        }
        return try TreePath(validating: text, allowPriority: false)
    }
}
