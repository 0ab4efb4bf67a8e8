import FiregateBackend
import FiregateEdge
import FiregateModel
import Hummingbird
import ServiceLifecycle

/// `:listen` through an edge client: SDK-level snapshots with metadata over SSE.
struct ClientListenRoute {
    let client: EdgeClient
    let ticker: KeepAliveTicker
    /// The tab opening the listener, on a shared persistence: the listener ends with the tab.
    var tab: String? = nil

    func open(_ target: DocumentRequestPath, _ request: Request, _ params: QueryParameters) async throws(FiregateError) -> Response {
        let queryJSON = try await ListenQueryParameter.structuredQuery(params, request)
        var options = ListenerOptions()
        options.owner = tab
        options.includeMetadataChanges = try params.bool("includeMetadataChanges") ?? false
        options.changesOnly = try params.bool("changesOnly") ?? false
        switch params.first("source")?.lowercased() {
        case nil, "default": options.cacheOnly = false
        case "cache": options.cacheOnly = true
        default: throw .invalidArgument("A listener's source must be default or cache.")
        }
        if let text = params.first("serverTimestamps") {
            guard let behavior = ServerTimestampBehavior(rawValue: text.lowercased()) else {
                throw .invalidArgument("serverTimestamps must be estimate, previous or none.")
            }
            options.serverTimestamps = behavior
        }
        let query: Query
        if let queryJSON {
            guard !target.path.isCollection else { throw .invalidArgument("A query listen names the root or a parent document, not a collection.") }
            var parsed = try Query(structuredQuery: queryJSON, parent: target.path, database: target.database)
            parsed.limitToLast = try params.bool("limitToLast") ?? false
            query = parsed
        } else {
            guard target.path.isDocument else {
                throw .invalidArgument("listen needs a document path, or a query (?query=<structuredQuery JSON> or a body).")
            }
            options.document = target.path
            query = Query.lookup(target.path, database: target.database)
        }
        let (events, continuation) = try await client.listen(query, options: options)
        return ClientListenRoute.eventStream(events, continuation, request, ticker: ticker)
    }

    /// `GET /clients/{id}/sharedClientState`: the notifications the client broadcasts to the
    /// other tabs of its persistence, as a stream.
    func sharedClientState(_ request: Request) async throws(FiregateError) -> Response {
        let (events, continuation) = try await client.observeSharedClientState()
        return ClientListenRoute.eventStream(events, continuation, request, ticker: ticker)
    }

    /// `GET /clients/{id}/snapshotsInSync`: the SDK's `onSnapshotsInSync` as a stream.
    func snapshotsInSync(_ request: Request) async throws(FiregateError) -> Response {
        let (events, continuation) = try await client.observeSnapshotsInSync()
        return ClientListenRoute.eventStream(events, continuation, request, ticker: ticker)
    }

    /// The SSE answer carrying a client's events, with keep-alives, until the client ends them,
    /// the caller hangs up or the server shuts down.
    static func eventStream(_ events: AsyncStream<EdgeEvent>, _ continuation: AsyncStream<EdgeEvent>.Continuation, _ request: Request,
                            ticker: KeepAliveTicker) -> Response {
        Response(status: .ok, headers: ServerSentEvents.headers, body: ResponseBody { writer in
            let keepAlive = ticker.register { continuation.yield(.keepAlive) }
            defer {
                ticker.unregister(keepAlive)
                continuation.finish()
            }
            await InboundClose.cancelling(request) {
                do {
                    try await withGracefulShutdownHandler {
                        try await ClientListenRoute.forward(events, to: &writer)
                    } onGracefulShutdown: {
                        continuation.yield(.error(FiregateError(.unavailable, "The server is shutting down.")))
                        continuation.finish()
                    }
                    try await writer.finish(nil)
                } catch {
                    // The client went away.
                }
            }
        })
    }

    /// Writes a listener's events as SSE frames until the listener ends.
    static func forward(_ events: AsyncStream<EdgeEvent>, to writer: inout any ResponseBodyWriter) async throws {
        for await event in events {
            switch event {
            case .snapshot(let id, let body):
                try await writer.write(ServerSentEvents.frame(event: "snapshot", id: String(id), data: body))
            case .sync(let token):
                try await writer.write(ServerSentEvents.frame(event: "sync", json: ["token": .string(token)]))
            case .snapshotsInSync:
                try await writer.write(ServerSentEvents.frame(event: "snapshotsInSync", json: [:]))
            case .clientState(let notification):
                try await writer.write(ServerSentEvents.frame(event: "clientState", json: notification))
            case .keepAlive:
                try await writer.write(ServerSentEvents.keepAlive)
            case .error(let error):
                try await writer.write(ServerSentEvents.frame(event: "error", json: JSON.errorBody(error)))
            }
        }
    }
}
