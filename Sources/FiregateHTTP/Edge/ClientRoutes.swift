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

    func dispatch(_ request: Request) async throws(FiregateError) -> Response {
        let raw = request.uri.path
        let rest = raw.dropFirst("/clients".count)
        if rest.isEmpty || rest == "/" {
            guard request.method == .get else { throw .notFound("No route for \(request.method) \(raw)") }
            // Each state is encoded as it comes: no tree of every client's state at once, whose
            // thousands of small allocations would stay in the server's memory once freed.
            var out = Array(#"{"clients":["#.utf8)
            for (index, id) in clients.listedIDs.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONWriter.write(await clients.state(of: id), into: &out)
            }
            out += Array("]}".utf8)
            return JSONResponse.bytes(out)
        }
        // /clients/{id}[:verb][/sub…]
        let afterSlash = rest.dropFirst()
        let idPart = afterSlash.prefix { $0 != "/" }
        let subpath = String(afterSlash.dropFirst(idPart.count))
        var rawID = String(idPart)
        var verb: String?
        if let colon = rawID.lastIndex(of: ":"), subpath.isEmpty {
            verb = String(rawID[rawID.index(after: colon)...])
            rawID = String(rawID[..<colon])
        }
        let id = try PercentDecoding.decode(rawID)
        guard !id.isEmpty, id.utf8.count <= 256 else { throw .invalidArgument("Invalid client id \"\(id)\".") }
        guard EdgeClients.sharedPersistenceKey(id) == nil else {
            throw .invalidArgument("Client ids starting with \"sharedWith/\" are the shared persistences' own; open a tab with {\"sharedWith\": key} instead.")
        }
        let prefixLength = "/clients/".utf8.count + idPart.utf8.count
        var request = request
        if let forwarding = documents.forwarding, clients.existing(id) == nil, clients.persistence(ofTab: id) == nil {
            // A tab runs where its shared persistence runs: opening one claims the persistence
            // first (its tabs may be routed anywhere), and goes where that runs.
            if request.method == .put, verb == nil, subpath.isEmpty, let key = try await Self.sharedWith(&request),
               let answer = try await forwarded(EdgeClients.engineID(key), request, forwarding) {
                return answer
            }
            if let answer = try await forwarded(id, request, forwarding) { return answer }
        }
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
            return await ClientDataRoutes(client: client, documents: documents, tab: tab).respond(request, prefixLength: prefixLength)
        }
        if verb == nil, subpath.hasSuffix(".json") || subpath.hasSuffix(".json/") {
            return await ClientTreeRoutes(client: clients.client(id), ticker: documents.ticker).respond(request, location: subpath)
        }
        if let verb {
            if let persistence = clients.persistence(ofTab: id), let response = try await TabRoutes(clients: clients, persistence: persistence, tab: id).control(verb, request) {
                return response
            }
            return try await control(id, verb: verb, request)
        }
        if subpath.isEmpty {
            return try await resource(id, request)
        }
        return try await subresource(id, subpath: subpath, request)
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

    /// POST /clients/{id}:verb
    func control(_ id: String, verb: String, _ request: Request) async throws(FiregateError) -> Response {
        guard request.method == .post else { throw .notFound("No route for \(request.method) \(request.uri.path)") }
        let client = clients.client(id)
        switch verb {
        case "disableNetwork":
            await client.disableNetwork()
            return JSONResponse.make(await client.state())
        case "enableNetwork":
            await client.enableNetwork()
            return JSONResponse.make(await client.state())
        case "restart":
            let lost = await client.restart()
            return JSONResponse.make(["lostWrites": .int(Int64(lost))])
        case "terminate":
            await client.terminate()
            return JSONResponse.make([:])
        case "clearPersistence":
            try await client.clearPersistence()
            return JSONResponse.make([:])
        case "waitForPendingWrites":
            let timeout = try QueryParameters(request).int("timeoutMs") ?? 60_000
            return try await waitForPendingWrites(client, timeoutMs: timeout)
        case "runTimer":
            let timers = try SDKTimer.parse(body: try await request.jsonObjectBody())
            return JSONResponse.make(["ran": .array(try await client.runTimers(timers).map { .string($0) })])
        case "loadBundle":
            return try await ClientBundleRoutes(client: client).load(request)
        case "collectGarbage":
            let body = try await request.jsonObjectBody()
            var threshold: Int64?, percentile: Int?
            if let value = body["thresholdBytes"], value != .null {
                guard let n = value.integerLike, n >= -1 else { throw .invalidArgument("thresholdBytes must be an integer ≥ 0, or -1 to collect nothing.") }
                threshold = n
            }
            if let value = body["percentile"], value != .null {
                guard let n = value.integerLike, (0...100).contains(n) else { throw .invalidArgument("percentile must be an integer from 0 to 100.") }
                percentile = Int(n)
            }
            let documents = try await client.collectGarbage(thresholdBytes: threshold, percentile: percentile)
            return JSONResponse.make(documents.withMember("tree", await client.pruneTree()))
        default:
            throw .notFound("Unknown client method \":\(verb)\".")
        }
    }

    func waitForPendingWrites(_ client: EdgeClient, timeoutMs: Int) async throws(FiregateError) -> Response {
        guard try await client.waitForPendingWrites(timeoutMs: timeoutMs) else {
            throw FiregateError(.deadlineExceeded, "Pending writes were not all acknowledged within \(timeoutMs) ms.")
        }
        return JSONResponse.make([:])
    }

    /// /clients/{id}/network, /gates, /gates:verb, /pendingWrites[/{writeId}]
    func subresource(_ id: String, subpath: String, _ request: Request) async throws(FiregateError) -> Response {
        let client = clients.client(id)
        if let persistence = clients.persistence(ofTab: id), let response = try await TabRoutes(clients: clients, persistence: persistence, tab: id).subresource(subpath, request) {
            return response
        }
        if request.method == .get, subpath.hasPrefix("/namedQueries/") {
            return try await ClientBundleRoutes(client: client).namedQuery(PercentDecoding.decode(String(subpath.dropFirst("/namedQueries/".count))))
        }
        switch (request.method, subpath) {
        case (.put, "/network"):
            try await client.setNetwork(try await request.jsonObjectBody())
            return JSONResponse.make(await client.networkJSON())
        case (.get, "/network"):
            return JSONResponse.make(await client.networkJSON())
        case (.put, "/gates"):
            try await client.setGates(try await request.jsonObjectBody())
            return JSONResponse.make(await client.gatesJSON())
        case (.get, "/gates"):
            return JSONResponse.make(await client.gatesJSON())
        case (.post, "/gates:releaseWatch"):
            await client.releaseWatchGate()
            return JSONResponse.make(await client.gatesJSON())
        case (.post, "/gates:releaseWrite"):
            return try await releaseWrite(client, request)
        case (.put, "/faults"):
            return JSONResponse.make(try await client.setFaults(try await request.jsonObjectBody()))
        case (.get, "/faults"):
            return JSONResponse.make(await client.faultsJSON)
        case (.post, "/watch"):
            return JSONResponse.make(try await client.deliverWatch(try await request.jsonObjectBody()))
        case (.post, "/gates:sync"):
            let body = try await request.jsonObjectBody()
            let token = body["token"]?.stringValue ?? ""
            await client.syncAll(token: token)
            return JSONResponse.make(["token": .string(token)])
        case (.get, "/pendingWrites"):
            let batches = await client.pendingWrites
            let database = await client.settings.databaseID
            let documentWrites: [JSON] = batches.map { batch in
                [
                    "id": .string(String(batch.id)),
                    "state": "pending",
                    "localWriteTime": .string(batch.localWriteTime.rfc3339),
                    "writes": .array(batch.writes.map { $0.json(database: database) }),
                ]
            }
            return JSONResponse.make(["writes": .array(documentWrites), "treeWrites": .array(await client.treePendingWrites())])
        case (.get, _) where subpath.hasPrefix("/pendingWrites/t"):
            let writeID = String(subpath.dropFirst("/pendingWrites/t".count))
            guard let n = Int64(writeID), let state = await client.treeWriteState(n) else {
                throw .notFound("No write \"t\(writeID)\" on client \(id).")
            }
            return JSONResponse.make(EdgeClient.render(treeWrite: n, state))
        case (.get, _) where subpath.hasPrefix("/pendingWrites/"):
            let writeID = String(subpath.dropFirst("/pendingWrites/".count))
            guard let n = Int64(writeID), let state = await client.writeState(n) else {
                throw .notFound("No write \"\(writeID)\" on client \(id).")
            }
            return JSONResponse.make(EdgeClient.render(n, state))
        case (.get, "/sharedClientState"):
            return try await ClientListenRoute(client: client, ticker: documents.ticker).sharedClientState(request)
        case (.get, "/snapshotsInSync"):
            await clients.client(id).noteActivity()
            return try await ClientListenRoute(client: clients.client(id), ticker: documents.ticker)
                .snapshotsInSync(request)
        case (.get, "/indexes"):
            return JSONResponse.make(await client.indexesJSON())
        case (.put, "/indexes"):
            return JSONResponse.make(try await client.configureIndexes(try await request.jsonObjectBody()))
        case (.delete, "/indexes"):
            return JSONResponse.make(try await client.deleteAllIndexes())
        case (.post, "/indexes:enableAutoCreation"):
            return JSONResponse.make(try await client.setIndexAutoCreation(true))
        case (.post, "/indexes:disableAutoCreation"):
            return JSONResponse.make(try await client.setIndexAutoCreation(false))
        default:
            if let response = try await ClientSessionRoutes(client: client).respond(request, subpath: subpath) { return response }
            throw .notFound("No route for \(request.method) \(request.uri.path)")
        }
    }

    func releaseWrite(_ client: EdgeClient, _ request: Request) async throws(FiregateError) -> Response {
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
