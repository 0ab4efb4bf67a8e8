import FiregateBackend
import Logging
import NIOCore

/// What every connection's fast path uses, made once per server: each `ConnectionFastPath`
/// keeps one reference to it, not its own copies (idle connections are many: docs/benchmarks.md's
/// idle-stream memory).
final class FastPathServices: Sendable {
    let backend: Backend
    let rules: FastPathRules
    let documents: DocumentRoutes
    let metrics: ServerMetrics
    let logger: Logger
    /// Takes `GET /.ws` upgrades: the connection becomes a Realtime Database socket.
    let sockets: RealtimeSockets?
    /// Off (`ServerConfiguration.fastPath`), every request takes the full path; sockets still upgrade.
    let enabled: Bool
    /// Installs a connection's full HTTP/1.1 path (Hummingbird's handlers and request loop), on
    /// its event loop, when its fast path first hands it input or an event it must see.
    let installFullPath: @Sendable (any Channel) -> Void
    /// `Firegate-Replica` on every answer when replicas share a PostgreSQL store.
    let replicaID: String?
    /// The WebChannel sessions, whose streaming back channels are served here.
    let webChannel: WebChannelRoutes?
    /// Each event loop's wake-ups of the streams it serves.
    let wakeQueues = EventLoopWakeQueues()

    init(documents: DocumentRoutes, metrics: ServerMetrics, logger: Logger, sockets: RealtimeSockets?, enabled: Bool,
         webChannel: WebChannelRoutes? = nil, installFullPath: @escaping @Sendable (any Channel) -> Void) {
        self.webChannel = webChannel
        (self.documents, backend, rules) = (documents, documents.backend, FastPathRules(rules: documents.backend.rules))
        (self.metrics, self.logger, self.sockets, self.enabled, self.installFullPath) = (metrics, logger, sockets, enabled, installFullPath)
        replicaID = documents.backend.replicas?.replicaID
    }
}
