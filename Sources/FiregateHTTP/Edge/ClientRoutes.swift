import FiregateBackend
import FiregateEdge
import FiregateModel
import Hummingbird

/// The edge-client surface: `/clients…` — control (settings, network, gates, lifecycle) and
/// data through a client (`/clients/{id}/v1/…`).
struct ClientRoutes: Sendable {
    let clients: EdgeClients
    let documents: DocumentRoutes

    func respond(to request: Request, context: BasicRequestContext) async -> Response {
        do {
            return try await dispatch(request)
        } catch {
            return ErrorResponse.firestore(error)
        }
    }

    /// On replicas, a client not running here is claimed, or its request goes to the replica
    /// that runs it (an event stream as a stream); nil when it runs here (from now on).
    private func forwarded(_ id: String, _ request: Request, _ forwarding: OwnerForwarding) async throws(FiregateError) -> Response? {
        let marked = try forwarding.isForwarded(request.headers)
        guard let owner = try forwarding.directory.claimClient(id) else { return nil }
        guard !marked else {
            throw FiregateError(.unavailable, "Edge client \(id) is run by replica \(owner.id); retry.")
        }
        let target = OwnerForwarding.Target(owner: owner, scope: nil)
        if FiregateResponder.mayStream(request) { return try await forwarding.forwardStream(request, to: target) }
        var request = request
        let body = try await request.collectedBody()
        return try await forwarding.forward(request, body: body, to: target)
    }

    /// The `sharedWith` key of a PUT opening a tab (its body kept for whoever reads it next).
    private static func sharedWith(_ request: inout Request) async throws(FiregateError) -> String? {
        let body = try await request.collectedBody()
        guard body.readableBytes > 0, let json = try? JSONParser.parse(body.readableBytesView) else { return nil }
        return json.member("sharedWith")?.stringValue
    }

    /// `/clients/{id}[:verb][/subpath]`, split; `prefixLength` counts `/clients/{id}` as sent.
    struct ClientPath {
        let id: String
        let verb: String?
        let subpath: String
        let prefixLength: Int

        init(_ rest: Substring) throws(FiregateError) {
            let afterSlash = rest.dropFirst()
            let idPart = afterSlash.prefix { $0 != "/" }
            subpath = String(afterSlash.dropFirst(idPart.count))
            var rawID = String(idPart)
            var verb: String?
            if let colon = rawID.lastIndex(of: ":"), subpath.isEmpty {
                verb = String(rawID[rawID.index(after: colon)...])
                rawID = String(rawID[..<colon])
            }
            self.verb = verb
            id = try PercentDecoding.decode(rawID)
            guard !id.isEmpty, id.utf8.count <= 256 else { throw .invalidArgument("Invalid client id \"\(id)\".") }
            guard EdgeClients.sharedPersistenceKey(id) == nil else {
                throw .invalidArgument("Client ids starting with \"sharedWith/\" are the shared persistences' own; open a tab with {\"sharedWith\": key} instead.")
            }
            prefixLength = "/clients/".utf8.count + idPart.utf8.count
        }
    }

    func dispatch(_ request: Request) async throws(FiregateError) -> Response {
        let rest = request.uri.path.dropFirst("/clients".count)
        if rest.isEmpty || rest == "/" {
            guard request.method == .get else { throw .notFound("No route for \(request.method) \(request.uri.path)") }
            return await list()
        }
        let path = try ClientPath(rest)
        let (id, verb, subpath) = (path.id, path.verb, path.subpath)
        var request = request
        if let answer = try await runElsewhere(path, &request) { return answer }
        if verb == nil, subpath == "/timeline", request.method == .get { return try await timeline(id, request) }
        if clients.isClosedTab(id) {
            // A terminated tab answers its state, DELETE, clearPersistence and a PUT that
            // opens it again; nothing else.
            if verb == "clearPersistence", request.method == .post {
                try await clients.clearPersistence(ofClosedTab: id)
                return JSONResponse.make([:])
            }
            guard verb == nil, subpath.isEmpty else { throw .clientState("The client has already been terminated.") }
        }
        if subpath.hasPrefix("/v1/") {
            // A data call is the client being alive (heartbeatTimeoutMs); tree calls count in
            // `treeAccess()`. Control calls come from the test harness, not the app.
            let client = clients.client(id)
            await client.noteActivity()
            let tab = clients.persistence(ofTab: id) == nil ? nil : id
            return await ClientDataRoutes(client: client, documents: documents, tab: tab).respond(request, prefixLength: path.prefixLength)
        }
        if verb == nil, subpath.hasSuffix(".json") || subpath.hasSuffix(".json/") {
            return await ClientTreeRoutes(client: clients.client(id), ticker: documents.ticker).respond(request, location: subpath)
        }
        if subpath.isEmpty, verb == nil {
            return try await resource(id, request)
        }
        // A tab of a shared persistence answers some calls itself; the engine the rest.
        if let persistence = clients.persistence(ofTab: id),
           let response = try await TabRoutes(clients: clients, persistence: persistence, tab: id).respond(verb: verb, subpath: subpath, request) {
            return response
        }
        return try await route(path, request)
    }

    /// GET /clients/{id}/timeline (docs/timeline.md): read without making the client, so a deleted
    /// client's lane can still be read; a tab's steps are its persistence engine's.
    private func timeline(_ id: String, _ request: Request) async throws(FiregateError) -> Response {
        let engine = clients.persistence(ofTab: id)?.engine ?? clients.closedTabEngine(id)
        let lane = TimelineLane.clientID(await engine?.id ?? id)
        guard documents.backend.timelines.lane(lane) != nil else { throw .notFound("No client \"\(id)\" has a timeline.") }
        return try TimelineRoutes(timelines: documents.backend.timelines, ticker: documents.ticker).respond(request, lanes: [lane])
    }

    /// GET /clients: each state encoded as it comes — no tree of every client's state at once,
    /// whose thousands of small allocations would stay in the server's memory once freed.
    private func list() async -> Response {
        var out = Array(#"{"clients":["#.utf8)
        for (index, id) in clients.listedIDs.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.write(await clients.state(of: id), into: &out)
        }
        out += Array("]}".utf8)
        return JSONResponse.bytes(out)
    }

    /// On replicas: the answer of the replica that runs this client (or its tab's persistence),
    /// nil when it runs here.
    private func runElsewhere(_ path: ClientPath, _ request: inout Request) async throws(FiregateError) -> Response? {
        guard let forwarding = documents.forwarding, clients.existing(path.id) == nil, clients.persistence(ofTab: path.id) == nil else { return nil }
        // A tab runs where its shared persistence runs: opening one claims the persistence
        // first (its tabs may be routed anywhere), and goes where that runs.
        if request.method == .put, path.verb == nil, path.subpath.isEmpty, let key = try await Self.sharedWith(&request),
           let answer = try await forwarded(EdgeClients.engineID(key), request, forwarding) {
            return answer
        }
        return try await forwarded(path.id, request, forwarding)
    }

    /// The declared routes: `POST …:verb` in `verbs`, subpaths in `subroutes`.
    private func route(_ path: ClientPath, _ request: Request) async throws(FiregateError) -> Response {
        let handler: ClientSubroute.Handler
        var parameter = ""
        if let verb = path.verb {
            guard request.method == .post else { throw .notFound("No route for \(request.method) \(request.uri.path)") }
            guard let found = ClientRoutes.verbs[verb] else { throw .notFound("Unknown client method \":\(verb)\".") }
            handler = found
        } else {
            guard let (route, value) = ClientRoutes.subroutes.lazy.compactMap({ route in route.match(request.method, path.subpath).map { (route, $0) } }).first else {
                throw .notFound("No route for \(request.method) \(request.uri.path)")
            }
            handler = route.handler
            parameter = value
        }
        return try await handler(ClientCall(routes: self, id: path.id, client: clients.client(path.id), request: request, parameter: parameter))
    }

    /// PUT/GET/DELETE /clients/{id}
    func resource(_ id: String, _ request: Request) async throws(FiregateError) -> Response {
        switch request.method {
        case .put:
            var body = try await request.jsonObjectBody()
            if let tab = try SharedPersistence.TabRequest.parse(&body) {
                _ = try await clients.openTab(id, body, tab)
            } else {
                // A terminated tab's id without sharedWith becomes a client of its own.
                if clients.isClosedTab(id) { _ = await clients.delete(id) }
                try await clients.client(id).configure(body)
            }
            return JSONResponse.make(await clients.state(of: id))
        case .get:
            return JSONResponse.make(await clients.state(of: id))
        case .delete:
            _ = await clients.delete(id)
            return JSONResponse.make([:])
        default:
            throw .notFound("No route for \(request.method) \(request.uri.path)")
        }
    }

    /// POST /clients/{id}/gates:releaseWrite
    static func releaseWrite(_ client: EdgeClient, _ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        if let fail = body["fail"], fail != .null {
            guard let name = fail.stringValue ?? fail.integerLike.map({ String($0) }), let status = Status(name: name), status != .ok else {
                throw .invalidArgument("fail must be a status name such as \"PERMISSION_DENIED\".")
            }
            let result = try await client.failAnyWrite(status)
            return JSONResponse.make(["released": .array(result.map { [$0] } ?? [])])
        }
        let count = body["count"]?.integerLike ?? 1
        guard count >= 0 else { throw .invalidArgument("count must not be negative.") }
        if let time = body["commitTime"], time != .null {
            // Acknowledged by the script at that time, without reaching the backend.
            guard let commitTime = time.stringValue.flatMap({ Timestamp(rfc3339: $0) }) else {
                throw .invalidArgument("commitTime must be an RFC 3339 timestamp.")
            }
            let released = try await client.acknowledgeWrites(count: Int(count), commitTime: commitTime)
            return JSONResponse.make(["released": .array(released.map { EdgeClient.render($0.0, $0.1) })])
        }
        return JSONResponse.make(["released": .array(try await client.releaseAnyWrites(count: Int(count)))])
    }
}
