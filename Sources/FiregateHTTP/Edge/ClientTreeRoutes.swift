import FiregateBackend
import FiregateEdge
import FiregateModel
import HTTPTypes
import Hummingbird
import NIOCore

/// The tree through one edge client: `/clients/{id}/{path}.json` with the backend's methods,
/// parameters and bodies, answered from the client's tree (latency-compensated writes,
/// offline reads from its cache), `Accept: text/event-stream` giving SDK-level events, and
/// `/.info/connected`, `/.info/serverTimeOffset`.
struct ClientTreeRoutes {
    let client: EdgeClient
    let ticker: KeepAliveTicker

    static let completeHeader = HTTPField.Name("Firegate-Complete")!

    func respond(_ request: Request, location: String) async -> Response {
        do {
            return try await route(request, location: location)
        } catch {
            return TreeResponses.error(ErrorResponse.normalize(error))
        }
    }

    func route(_ request: Request, location: String) async throws -> Response {
        let tree = try await client.treeAccess()
        let namespace = await client.settings.namespace
        let (call, path) = try ClientTreeRoutes.parse(request, location: location, namespace: namespace)
        if call.shallow || call.wantsETag || call.ifMatch != nil || call.ifNoneMatch != nil {
            throw FiregateError.invalidArgument("shallow, ETags and if-match/if-none-match are REST features of the backend; the SDK has none, so a client does not take them.")
        }
        guard call.namespace == namespace else {
            throw FiregateError.invalidArgument("This client is configured for namespace \(namespace), not \(call.namespace).")
        }
        let parameters = Dictionary(try request.queryItems().map { ($0.0, $0.1) }, uniquingKeysWith: { a, _ in a })
        let key = TreeViewKey(path: path, query: call.query, parameters: parameters)
        let waitForAck = try QueryParameters(request).first("waitFor") == "ack"
        switch call.method {
        case .options:
            return TreeResponses.preflight()
        case .get:
            if call.wantsStream {
                let client = self.client
                return try await ClientTreeStream.open(tree, key: key, request: request, ticker: ticker) { await client.noteStreamClosed() }
            }
            let read = try await tree.read(key)
            var headers = ClientTreeRoutes.readHeaders(fromCache: read.fromCache, pending: read.hasPendingWrites)
            headers[ClientTreeRoutes.completeHeader] = read.complete ? "true" : "false"
            return ClientTreeRoutes.with(headers, TreeResponses.json(read.result.bytes(format: call.format, style: TreeResponses.style(call)), for: call))
        case .put:
            let receipt = try await tree.write(.set(path, try await TreeRoutes.body(request)))
            return try await answer(receipt, tree, call, waitForAck: waitForAck) { TreeNodeWriter.bytes(receipt.value, format: call.format, style: TreeResponses.style(call)) }
        case .delete:
            let receipt = try await tree.write(.set(path, .null))
            return try await answer(receipt, tree, call, waitForAck: waitForAck) { Array("null".utf8) }
        case .post:
            let receipt = try await tree.write(.push(path, try await TreeRoutes.body(request)))
            return try await answer(receipt, tree, call, waitForAck: waitForAck) {
                JSONWriter.bytes(["name": .string(receipt.pushKey ?? "")], style: TreeResponses.style(call))
            }
        case .patch:
            let entries = try TreeRoutes.patchEntries(try await TreeRoutes.body(request))
            let receipt = try await tree.write(.update(path, entries))
            return try await answer(receipt, tree, call, waitForAck: waitForAck) {
                var members: [(String, TreeNodeWriter.Member)] = receipt.entries.map { ($0.path.joined, .node($0.node)) }
                var echo: [UInt8] = []
                TreeNodeWriter.writeObject(&members, format: call.format, style: TreeResponses.style(call), indent: 0, into: &echo)
                return echo
            }
        }
    }

    /// The location of a client tree request: `.info` paths are the client's own.
    static func parse(_ request: Request, location: String, namespace: String) throws(FiregateError) -> (TreeRequest, TreePath) {
        let infoPrefix = "/" + ".info"
        guard location == infoPrefix + ".json" || location.hasPrefix(infoPrefix + "/") else {
            let call = try TreeRequest(request, defaultNamespace: namespace, location: location)
            return (call, call.path)
        }
        let rest = location == infoPrefix + ".json" ? "/.json" : String(location.dropFirst(infoPrefix.count))
        let call = try TreeRequest(request, defaultNamespace: namespace, location: rest)
        guard call.method == .get || call.method == .options else { throw FiregateError.invalidArgument("Can't modify data under /.info/") }
        return (call, TreePath(keys: [".info"] + call.path.keys))
    }

    /// A write's answer: at once (the local result), or with `?waitFor=ack` once the server
    /// acknowledged it (the server's result) or rejected it (its error).
    func answer(_ receipt: TreeWriteReceipt, _ tree: TreeSync, _ call: TreeRequest, waitForAck: Bool,
                local: () -> [UInt8]) async throws -> Response {
        guard let id = receipt.id else {
            var headers = ClientTreeRoutes.readHeaders(fromCache: false, pending: false)
            headers[ClientTreeRoutes.writeStateHeader] = "acknowledged"
            return ClientTreeRoutes.with(headers, TreeResponses.json(local(), for: call))
        }
        var state = TreeWriteState.pending
        if waitForAck { state = await tree.outcome(of: id) }
        if case .rejected(let error) = state { throw error }
        // As on documents: a write answered at once is the local (cached) result.
        var headers = ClientTreeRoutes.readHeaders(fromCache: !waitForAck, pending: !waitForAck)
        headers[ClientTreeRoutes.writeIDHeader] = "t\(id)"
        headers[ClientTreeRoutes.writeStateHeader] = state.name
        var body = local()
        if case .acknowledged(let server) = state, call.method == .put {
            body = JSONWriter.bytes(server, style: TreeResponses.style(call))
        }
        return ClientTreeRoutes.with(headers, TreeResponses.json(body, for: call))
    }

    static let writeIDHeader = HTTPField.Name("Firegate-Write-Id")!
    static let writeStateHeader = HTTPField.Name("Firegate-Write-State")!

    static func readHeaders(fromCache: Bool, pending: Bool) -> HTTPFields {
        [HTTPField.Name("Firegate-From-Cache")!: fromCache ? "true" : "false", HTTPField.Name("Firegate-Has-Pending-Writes")!: pending ? "true" : "false"]
    }

    static func with(_ headers: HTTPFields, _ response: Response) -> Response {
        var response = response
        for field in headers { response.headers[field.name] = field.value }
        return response
    }
}
