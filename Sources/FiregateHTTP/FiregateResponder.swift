import FiregateBackend
import FiregateEdge
import FiregateModel
import HTTPTypes
import Hummingbird
import Logging

/// Routes every request by the shape of its path (docs/architecture.md): `/clients/…` → edge,
/// `/v1/projects/…` → documents, `/emulator/…`, `/healthz` and `/metrics` → operations,
/// `/google.firestore.v1.Firestore/…/channel` → WebChannel streams, `….json` → tree, anything else → the dashboard's files. Every request is counted, timed
/// and logged (one line at `debug`) here.
///
/// One responder rather than a route trie because Firestore names carry `:verb` suffixes and
/// arbitrary depth, which a segment router cannot express.
public struct FiregateResponder: HTTPResponder {
    public typealias Context = BasicRequestContext

    let documents: DocumentRoutes
    let tree: TreeRoutes
    let operations: OperationRoutes
    let clients: ClientRoutes
    let webChannel: WebChannelRoutes
    let staticFiles: StaticFiles
    let adminToken: AdminToken
    let metrics: ServerMetrics
    let logger: Logger
    let crossOrigin = CrossOrigin()
    /// `Firegate-Replica` on every answer when replicas share a PostgreSQL store.
    var replicaID: String? { operations.backend.replicas?.replicaID }

    public func respond(to request: Request, context: Context) async throws -> Response {
        let started = ContinuousClock.now
        let path = request.uri.path
        let surface = Surface(path: path)
        var response: Response
        do {
            response = try await crossOrigin.handle(request, context: context) { request, context in
                if FiregateResponder.mayStream(request) {
                    // A stream keeps its connection's task for as long as it is open, and a task keeps
                    // the async-frame memory of its deepest call for its whole life: the routing, the
                    // first query and the first frame run in a task of their own, so an idle stream
                    // holds only the frames of writing it (the idle-stream bar, docs/benchmarks.md).
                    return await Task { await route(surface, request, context: context) }.value
                }
                return await route(surface, request, context: context)
            }
        } catch {
            response = ErrorResponse.firestore(ErrorResponse.normalize(error))
        }
        if response.headers[.contentType]?.hasPrefix("text/event-stream") == true {
            response.body = countingStream(response.body, surface: surface)
        } else if let length = response.body.contentLength, length >= FiregateResponder.gzipThreshold,
                  response.headers[.contentEncoding] == nil, let accepted = request.headers[.acceptEncoding], FiregateResponder.acceptsGzip(accepted) {
            response = await FiregateResponder.gzipped(response)
        }
        if let replicaID { response.headers[FiregateResponder.replicaHeader] = replicaID }
        let duration = ContinuousClock.now - started
        metrics.requestFinished(surface: surface, method: request.method.rawValue, status: response.status.code, duration: duration)
        if logger.logLevel <= .debug {
            FiregateResponder.logRequest(logger, method: request.method.rawValue, path: path, status: response.status.code,
                                         duration: duration, surface: surface)
        }
        return response
    }

    static let replicaHeader = HTTPField.Name("Firegate-Replica")!

    /// Whether the answer may be an event stream: a `:listen` (documents), or an `Accept` of
    /// event streams (tree, operations events, edge tree streams).
    static func mayStream(_ request: Request) -> Bool {
        request.uri.path.hasSuffix(":listen") || request.uri.path.hasSuffix("/events") || request.uri.path.hasSuffix("/snapshotsInSync")
            || (request.headers[.accept]?.contains("text/event-stream") ?? false)
            || (request.method == .get && request.uri.path.hasPrefix(WebChannelRoutes.pathPrefix))
    }

    /// The one line per request, at `debug`: the server as users start it (`info`) logs no
    /// line per request — at `info` the log cost half the GET rate and wrote 84 MB in 15 s of
    /// load — and `--log-level debug` shows every request when debugging a test.
    static func logRequest(_ logger: Logger, method: String, path: String, status: Int, duration: Duration, surface: Surface) {
        logger.debug("request", metadata: [
            "method": .string(method), "path": .string(path), "status": .stringConvertible(status),
            "durationMs": .stringConvertible((Double(duration.nanoseconds) / 1000).rounded() / 1000), "surface": .string(surface.rawValue),
        ])
    }

    func route(_ surface: Surface, _ request: Request, context: Context) async -> Response {
        if let refused = adminToken.check(request) {
            return ErrorResponse.firestore(refused)
        }
        if request.uri.path == "/.inspect/coverage" || request.uri.path == "/.inspect/coverage.json" {
            // The Realtime Database emulator's coverage report.
            return await RulesReportRoutes(rules: operations.backend.rules)
                .treeCoverage(request, defaultNamespace: operations.backend.defaultProject, json: request.uri.path.hasSuffix(".json"))
        }
        switch surface {
        case .clients: return await clients.respond(to: request, context: context)
        case .documents: return await documents.respond(to: request, context: context)
        case .webchannel: return await webChannel.respond(to: request, context: context)
        case .operations:
            if request.uri.path == "/metrics" { return await scrape(request) }
            return await operations.respond(to: request, context: context)
        case .tree: return await tree.respond(to: request, context: context)
        case .dashboard:
            if request.uri.path == RealtimeUpgradeRequest.path {
                // A socket opens as its connection's first request (the protocol sniffer takes it);
                // one that reaches the router came behind another request, or without an upgrade.
                return TreeResponses.error(.invalidArgument(
                    "/.ws is the Realtime Database's WebSocket endpoint: open it with an Upgrade: websocket request as a connection's first request."))
            }
            return await staticFiles.respond(to: request, context: context)
        }
    }

    /// The open-streams gauge follows the stream's body: up when it starts, down when it ends.
    func countingStream(_ body: ResponseBody, surface: Surface) -> ResponseBody {
        let metrics = self.metrics
        return ResponseBody { writer in
            metrics.streamOpened(surface)
            defer { metrics.streamClosed(surface) }
            try await body.write(writer)
        }
    }

    /// Answers smaller than this are not worth compressing.
    static let gzipThreshold = 1024

    /// Whether an `Accept-Encoding` value allows gzip.
    static func acceptsGzip(_ accepted: String) -> Bool {
        accepted.split(separator: ",").contains { item in
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard parts.first == "gzip" || parts.first == "*" else { return false }
            return !parts.dropFirst().contains { $0.replacingOccurrences(of: " ", with: "") == "q=0" }
        }
    }

    /// The same answer with its body gzip-compressed.
    static func gzipped(_ response: Response) async -> Response {
        let collected = CollectedBody()
        do { try await response.body.write(CollectingBodyWriter(target: collected)) } catch { return response }
        var headers = response.headers
        headers[.contentEncoding] = "gzip"
        headers[.vary] = "Accept-Encoding"
        headers[.contentLength] = nil
        return Response(status: response.status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: Gzip.compress(collected.bytes))))
    }

    /// GET /metrics: Prometheus text exposition.
    func scrape(_ request: Request) async -> Response {
        guard request.method == .get else { return ErrorResponse.firestore(OperationRoutes.noRoute(request)) }
        let text = await metrics.scrape(backend: operations.backend, clients: clients.clients, connections: operations.connections)
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: .init(byteBuffer: .init(bytes: text)))
    }
}
