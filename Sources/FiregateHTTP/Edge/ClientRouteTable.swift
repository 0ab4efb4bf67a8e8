import FiregateEdge
import FiregateModel
import HTTPTypes
import Hummingbird

/// One route under `/clients/{id}`: a method and a subpath that is either exact (`/network`,
/// `/gates:releaseWatch`) or ends in one parameter segment (`/pendingWrites/{writeId}`). A
/// request matches at most one route (`ClientRouteTableTests`), so the table's order means
/// nothing.
struct ClientSubroute: Sendable {
    typealias Handler = @Sendable (ClientCall) async throws(FiregateError) -> Response

    let method: HTTPRequest.Method
    let pattern: String
    let handler: Handler

    init(_ method: HTTPRequest.Method, _ pattern: String, _ handler: @escaping Handler) {
        self.method = method
        self.pattern = pattern
        self.handler = handler
    }

    /// The parameter segment when the request matches ("" for an exact pattern), else nil.
    func match(_ method: HTTPRequest.Method, _ subpath: String) -> String? {
        guard method == self.method else { return nil }
        guard let open = pattern.firstIndex(of: "{") else { return subpath == pattern ? "" : nil }
        let prefix = pattern[..<open]
        guard subpath.hasPrefix(prefix) else { return nil }
        let parameter = subpath.dropFirst(prefix.count)
        return parameter.isEmpty || parameter.contains("/") ? nil : String(parameter)
    }
}

/// What a route's handler gets: the routes (for the backend), the client and the request.
struct ClientCall: Sendable {
    let routes: ClientRoutes
    let id: String
    let client: EdgeClient
    let request: Request
    /// The pattern's parameter segment ("" when it has none).
    let parameter: String
}

extension ClientRoutes {
    /// `/clients/{id}/…` other than the data (`/v1/…`) and tree (`….json`) calls.
    static let subroutes: [ClientSubroute] = [
        ClientSubroute(.put, "/network") { call throws(FiregateError) in
            try await call.client.setNetwork(try await call.request.jsonObjectBody())
            return JSONResponse.make(await call.client.networkJSON())
        },
        ClientSubroute(.get, "/network") { call in JSONResponse.make(await call.client.networkJSON()) },
        ClientSubroute(.put, "/gates") { call throws(FiregateError) in
            try await call.client.setGates(try await call.request.jsonObjectBody())
            return JSONResponse.make(await call.client.gatesJSON())
        },
        ClientSubroute(.get, "/gates") { call in JSONResponse.make(await call.client.gatesJSON()) },
        ClientSubroute(.post, "/gates:releaseWatch") { call in
            await call.client.releaseWatchGate()
            return JSONResponse.make(await call.client.gatesJSON())
        },
        ClientSubroute(.post, "/gates:releaseWrite") { call throws(FiregateError) in try await ClientRoutes.releaseWrite(call.client, call.request) },
        ClientSubroute(.post, "/gates:sync") { call throws(FiregateError) in
            let token = try await call.request.jsonObjectBody()["token"]?.stringValue ?? ""
            await call.client.syncAll(token: token)
            return JSONResponse.make(["token": .string(token)])
        },
        ClientSubroute(.put, "/faults") { call throws(FiregateError) in
            JSONResponse.make(try await call.client.setFaults(try await call.request.jsonObjectBody()))
        },
        ClientSubroute(.get, "/faults") { call in JSONResponse.make(await call.client.faultsJSON) },
        ClientSubroute(.post, "/watch") { call throws(FiregateError) in
            JSONResponse.make(try await call.client.deliverWatch(try await call.request.jsonObjectBody()))
        },
        ClientSubroute(.get, "/pendingWrites") { call in
            let batches = await call.client.pendingWrites
            let database = await call.client.settings.databaseID
            let documentWrites: [JSON] = batches.map { batch in
                ["id": .string(String(batch.id)), "state": "pending", "localWriteTime": .string(batch.localWriteTime.rfc3339),
                 "writes": .array(batch.writes.map { $0.json(database: database) })]
            }
            return JSONResponse.make(["writes": .array(documentWrites), "treeWrites": .array(await call.client.treePendingWrites())])
        },
        // A document write's id is a number; a tree write's, `t` and a number.
        ClientSubroute(.get, "/pendingWrites/{writeId}") { call throws(FiregateError) in
            if call.parameter.hasPrefix("t") {
                guard let n = Int64(call.parameter.dropFirst()), let state = await call.client.treeWriteState(n) else {
                    throw .notFound("No write \"\(call.parameter)\" on client \(call.id).")
                }
                return JSONResponse.make(EdgeClient.render(treeWrite: n, state))
            }
            guard let n = Int64(call.parameter), let state = await call.client.writeState(n) else {
                throw .notFound("No write \"\(call.parameter)\" on client \(call.id).")
            }
            return JSONResponse.make(EdgeClient.render(n, state))
        },
        ClientSubroute(.get, "/namedQueries/{name}") { call throws(FiregateError) in
            try await ClientBundleRoutes(client: call.client).namedQuery(PercentDecoding.decode(call.parameter))
        },
        ClientSubroute(.get, "/sharedClientState") { call throws(FiregateError) in
            try await ClientListenRoute(client: call.client, ticker: call.routes.documents.ticker).sharedClientState(call.request)
        },
        ClientSubroute(.get, "/snapshotsInSync") { call throws(FiregateError) in
            await call.client.noteActivity()
            return try await ClientListenRoute(client: call.client, ticker: call.routes.documents.ticker).snapshotsInSync(call.request)
        },
        ClientSubroute(.get, "/indexes") { call in JSONResponse.make(await call.client.indexesJSON()) },
        ClientSubroute(.put, "/indexes") { call throws(FiregateError) in
            JSONResponse.make(try await call.client.configureIndexes(try await call.request.jsonObjectBody()))
        },
        ClientSubroute(.delete, "/indexes") { call throws(FiregateError) in JSONResponse.make(try await call.client.deleteAllIndexes()) },
        ClientSubroute(.post, "/indexes:enableAutoCreation") { call throws(FiregateError) in
            JSONResponse.make(try await call.client.setIndexAutoCreation(true))
        },
        ClientSubroute(.post, "/indexes:disableAutoCreation") { call throws(FiregateError) in
            JSONResponse.make(try await call.client.setIndexAutoCreation(false))
        },
    ] + ClientSessionRoutes.subroutes

    /// `POST /clients/{id}:verb`.
    static let verbs: [String: ClientSubroute.Handler] = [
        "disableNetwork": { call in
            await call.client.disableNetwork()
            return JSONResponse.make(await call.client.state())
        },
        "enableNetwork": { call in
            await call.client.enableNetwork()
            return JSONResponse.make(await call.client.state())
        },
        "restart": { call in JSONResponse.make(["lostWrites": .int(Int64(await call.client.restart()))]) },
        "terminate": { call in
            await call.client.terminate()
            return JSONResponse.make([:])
        },
        "clearPersistence": { call throws(FiregateError) in
            try await call.client.clearPersistence()
            return JSONResponse.make([:])
        },
        "waitForPendingWrites": { call throws(FiregateError) in
            let timeoutMs = try QueryParameters(call.request).int("timeoutMs") ?? 60_000
            guard try await call.client.waitForPendingWrites(timeoutMs: timeoutMs) else {
                throw FiregateError(.deadlineExceeded, "Pending writes were not all acknowledged within \(timeoutMs) ms.")
            }
            return JSONResponse.make([:])
        },
        "runTimer": { call throws(FiregateError) in
            let timers = try SDKTimer.parse(body: try await call.request.jsonObjectBody())
            return JSONResponse.make(["ran": .array(try await call.client.runTimers(timers).map { .string($0) })])
        },
        "loadBundle": { call throws(FiregateError) in try await ClientBundleRoutes(client: call.client).load(call.request) },
        "collectGarbage": { call throws(FiregateError) in
            let body = try await call.request.jsonObjectBody()
            var threshold: Int64?, percentile: Int?
            if let value = body["thresholdBytes"], value != .null {
                guard let n = value.integerLike, n >= -1 else { throw .invalidArgument("thresholdBytes must be an integer ≥ 0, or -1 to collect nothing.") }
                threshold = n
            }
            if let value = body["percentile"], value != .null {
                guard let n = value.integerLike, (0...100).contains(n) else { throw .invalidArgument("percentile must be an integer from 0 to 100.") }
                percentile = Int(n)
            }
            let documents = try await call.client.collectGarbage(thresholdBytes: threshold, percentile: percentile)
            return JSONResponse.make(documents.withMember("tree", await call.client.pruneTree()))
        },
    ]
}
