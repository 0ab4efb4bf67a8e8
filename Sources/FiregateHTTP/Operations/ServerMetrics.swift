import CoreMetrics
import FiregateBackend
import FiregateEdge
import Foundation
import Prometheus
import Synchronization

/// The server's Prometheus metrics (`GET /metrics`), recorded through swift-metrics into a
/// registry of this server's own, so that servers in one process (tests) never mix.
///
/// Per-request figures are recorded as requests finish; figures of clients and of the
/// operations log are read when scraped.
final class ServerMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private let requests = Mutex<[RequestKey: CoreMetrics.Counter]>([:])
    private let grpcCalls = Mutex<[String: CoreMetrics.Counter]>([:])
    private let latency: [Surface: CoreMetrics.Timer]
    private let streams: [Surface: CoreMetrics.Meter]
    /// Counters mirrored from totals kept elsewhere: the total last exported, per counter.
    private let mirrored = Mutex<[String: (counter: CoreMetrics.Counter, exported: Int64)]>([:])

    private struct RequestKey: Hashable {
        let surface: Surface
        let method: String
        let status: Int
    }

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
        ]
        self.factory = factory
        var latency: [Surface: CoreMetrics.Timer] = [:]
        var streams: [Surface: CoreMetrics.Meter] = [:]
        for surface in Surface.allCases {
            latency[surface] = CoreMetrics.Timer(label: "firegate_request_duration_seconds", dimensions: [("surface", surface.rawValue)], factory: factory)
            streams[surface] = CoreMetrics.Meter(label: "firegate_sse_streams", dimensions: [("surface", surface.rawValue)], factory: factory)
        }
        self.latency = latency
        self.streams = streams
    }

    /// A finished request: counted by surface, method and status; timed by surface.
    func requestFinished(surface: Surface, method: String, status: Int, duration: Duration) {
        let key = RequestKey(surface: surface, method: method, status: status)
        let counter = requests.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = CoreMetrics.Counter(label: "firegate_requests_total",
                               dimensions: [("surface", surface.rawValue), ("method", method), ("status", String(status))], factory: factory)
            counters[key] = made
            return made
        }
        counter.increment()
        latency[surface]?.recordNanoseconds(duration.nanoseconds)
    }

    /// A finished gRPC call, counted by method and status name (`firegate_grpc_calls_total`).
    func grpcCallFinished(method: String, code: String) {
        grpcCallCounter(method: method, code: code).increment()
    }

    /// The counter of one method and status, for callers that keep it.
    func grpcCallCounter(method: String, code: String) -> CoreMetrics.Counter {
        let key = method + "|" + code
        return grpcCalls.withLock { counters in
            if let existing = counters[key] { return existing }
            let made = CoreMetrics.Counter(label: "firegate_grpc_calls_total", dimensions: [("method", method), ("code", code)], factory: factory)
            counters[key] = made
            return made
        }
    }

    func streamOpened(_ surface: Surface) { streams[surface]?.increment() }
    func streamClosed(_ surface: Surface) { streams[surface]?.decrement() }

    /// The exposition text, after reading the figures kept by clients and the backend.
    func scrape(backend: Backend, clients: EdgeClients, connections: ConnectionRegistry) async -> [UInt8] {
        var online = 0, offline = 0, bytes = 0, documents = 0, pending = 0
        let retired = clients.retiredStatistics
        var hits = retired.hits, misses = retired.misses, evictions = retired.evictions
        for client in clients.all {
            let sample = await client.sample()
            if sample.online { online += 1 } else { offline += 1 }
            bytes += sample.cacheBytes
            documents += sample.cacheDocuments
            pending += sample.pendingWrites
            hits += sample.cache.hits
            misses += sample.cache.misses
            evictions += sample.cache.evictions
        }
        gauge("firegate_clients", [("state", "online")], online)
        gauge("firegate_clients", [("state", "offline")], offline)
        gauge("firegate_client_cache_bytes", [], bytes)
        gauge("firegate_client_cache_documents", [], documents)
        gauge("firegate_client_pending_writes", [], pending)
        mirror("firegate_client_cache_hits_total", [], hits)
        mirror("firegate_client_cache_misses_total", [], misses)
        mirror("firegate_client_cache_evictions_total", [], evictions)
        let counts = backend.operations.counts
        mirror("firegate_commits_total", [("surface", "documents")], counts["commit"] ?? 0)
        mirror("firegate_commits_total", [("surface", "tree")], counts["treeWrite"] ?? 0)
        mirror("firegate_client_writes_total", [("outcome", "acknowledged")], counts["writeAcknowledged"] ?? 0)
        mirror("firegate_client_writes_total", [("outcome", "rejected")], counts["writeRejected"] ?? 0)
        mirror("firegate_gc_runs_total", [], counts["gc"] ?? 0)
        mirror("firegate_on_disconnect_runs_total", [], counts["onDisconnect"] ?? 0)
        gauge("firegate_documents", [], backend.documents.allDatabases.reduce(0) { $0 + $1.documentCount })
        let decisions = backend.rules.decisions.counts
        for outcome in RulesDecisionRecord.Outcome.allCases {
            mirror("firegate_rules_decisions_total", [("outcome", outcome.rawValue)], Int64(decisions[outcome] ?? 0))
        }
        if let holdings = backend.replicas?.holdings() {
            // On replicas: what this one owns and follows (docs/replicas.md).
            gauge("firegate_replica_scopes", [("kind", "database"), ("role", "owner")], holdings.ownedDatabases)
            gauge("firegate_replica_scopes", [("kind", "namespace"), ("role", "owner")], holdings.ownedNamespaces)
            gauge("firegate_replica_scopes", [("kind", "database"), ("role", "follower")], holdings.followedDatabases)
            gauge("firegate_replica_scopes", [("kind", "namespace"), ("role", "follower")], holdings.followedNamespaces)
            gauge("firegate_replica_edge_clients", [], holdings.clients)
        }
        let open = connections.countsByProtocol
        for name in ["firestore-grpc", "rtdb-websocket"] {
            gauge("firegate_connections", [("protocol", name)], open[name] ?? 0)
        }
        return registry.emitToBuffer()
    }

    private func gauge(_ label: String, _ dimensions: [(String, String)], _ value: Int) {
        CoreMetrics.Gauge(label: label, dimensions: dimensions, factory: factory).record(value)
    }

    /// Brings a counter up to `total` (totals only grow; a smaller one after a reset is ignored).
    private func mirror(_ label: String, _ dimensions: [(String, String)], _ total: Int64) {
        let key = label + dimensions.map { "|\($0.0)=\($0.1)" }.joined()
        let (counter, delta) = mirrored.withLock { mirrored -> (CoreMetrics.Counter, Int64) in
            var entry = mirrored[key] ?? (CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory), 0)
            let delta = max(0, total - entry.exported)
            entry.exported = max(entry.exported, total)
            mirrored[key] = entry
            return (entry.counter, delta)
        }
        if delta > 0 { counter.increment(by: delta) }
    }
}

/// Which surface a request went to, by the shape of its path (docs/architecture.md).
enum Surface: String, CaseIterable, Sendable {
    case documents, tree, clients, operations, webchannel, dashboard

    init(path: String) {
        if path.hasPrefix("/clients") && (path.count == 8 || path.dropFirst(8).first == "/") {
            self = .clients
        } else if path.hasPrefix("/v1/") {
            self = .documents
        } else if path.hasPrefix(WebChannelRoutes.pathPrefix) {
            self = .webchannel
        } else if path.hasPrefix("/emulator/") || path == "/healthz" || path == "/metrics" {
            self = .operations
        } else if path.hasSuffix(".json") || path.hasSuffix(".json/") {
            self = .tree
        } else {
            self = .dashboard
        }
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
