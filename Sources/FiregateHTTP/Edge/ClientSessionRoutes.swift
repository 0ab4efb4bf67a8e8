import FiregateBackend
import FiregateEdge
import FiregateModel
import Hummingbird

/// The client calls beside tree reads and writes: `/onDisconnect`, `/keepSynced`,
/// `/transaction` and `/auth`.
struct ClientSessionRoutes {
    let client: EdgeClient

    func respond(_ request: Request, subpath: String) async throws(FiregateError) -> Response? {
        switch (request.method, subpath) {
        case (.post, "/onDisconnect"):
            let tree = try await client.treeAccess()
            let body = try await request.jsonObjectBody()
            guard let op = body["op"]?.stringValue else { throw .invalidArgument("op must be \"set\", \"update\" or \"remove\".") }
            return JSONResponse.make(try await tree.addOnDisconnect(path: try ClientSessionRoutes.path(body["path"]), op: op, value: body["value"]))
        case (.delete, "/onDisconnect"):
            let tree = try await client.treeAccess()
            let path = try ClientSessionRoutes.path(try QueryParameters(request).first("path").map(JSON.string) ?? .string("/"))
            return JSONResponse.make(["cancelled": .int(Int64(await tree.cancelOnDisconnect(path: path)))])
        case (.post, "/keepSynced"):
            let tree = try await client.treeAccess()
            let body = try await request.jsonObjectBody()
            guard let enabled = body["enabled"]?.boolValue else { throw .invalidArgument("enabled must be a boolean.") }
            var parameters: [String: String] = [:]
            if case .object(let members)? = body["query"] {
                for (name, value) in members { parameters[name] = value.stringValue ?? String(decoding: JSONWriter.bytes(value), as: UTF8.self) }
            }
            let path = try ClientSessionRoutes.path(body["path"])
            try await tree.keepSynced(TreeViewKey(path: path, query: try TreeQueryParser.parse(parameters), parameters: parameters), enabled)
            return JSONResponse.make(["path": .string(path.description), "enabled": .bool(enabled)])
        case (.post, "/transaction"):
            let tree = try await client.treeAccess()
            let body = try await request.jsonObjectBody()
            let path = try ClientSessionRoutes.path(body["path"])
            let receipt = try await tree.write(.transaction(path, body))
            guard let id = receipt.id else {
                return JSONResponse.make(["committed": false, "value": receipt.value.json], headers: [ClientTreeRoutes.writeStateHeader: "acknowledged"])
            }
            guard try QueryParameters(request).first("waitFor") == "ack" else {
                return JSONResponse.make(["committed": true, "value": receipt.value.json],
                                         headers: [ClientTreeRoutes.writeIDHeader: "t\(id)", ClientTreeRoutes.writeStateHeader: "pending"])
            }
            switch await tree.outcome(of: id) {
            case .acknowledged(let answer):
                return JSONResponse.make(answer, headers: [ClientTreeRoutes.writeIDHeader: "t\(id)", ClientTreeRoutes.writeStateHeader: "acknowledged"])
            case .rejected(let error): throw error
            case .pending: throw FiregateError(.internal, "The transaction ended without an outcome.")
            }
        case (.put, "/auth"):
            return JSONResponse.make(try await client.setAuth(try await request.jsonObjectBody()))
        case (.get, "/auth"):
            return JSONResponse.make(await client.authJSON)
        default:
            return nil
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
