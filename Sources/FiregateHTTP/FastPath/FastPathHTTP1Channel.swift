import FiregateBackend
import HummingbirdCore
import Logging
import NIOCore
import Synchronization

/// Hummingbird's HTTP/1.1 channel with `ConnectionFastPath` in front of its parser (behind TLS
/// when the server speaks HTTPS, since TLS wraps this setup).
///
/// Hummingbird's handlers are put in the pipeline, and its request loop started (`OpenConnections`),
/// only when the fast path first hands it input: a connection the fast path serves alone — a
/// poller, an open stream — holds neither their state nor a task (DESIGN §3's idle-stream
/// memory).
struct FastPathHTTP1Channel: Sendable {
    let base: HTTP1Channel
    let makeFastPath: @Sendable (FullPathStart) -> ConnectionFastPath

    /// The first read of a connection is small (a request head): a smaller first buffer than
    /// NIO's 2 KiB, which every connection keeps for its next read; it grows as reads fill it.
    static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)

    /// Puts the fast path in `channel`'s pipeline; on the event loop.
    func setup(channel: any Channel, connections: OpenConnections, logger: Logger) throws {
        let base = self.base
        let fullPath = FullPathStart {
            // On the event loop, before the fast path passes anything on: Hummingbird's setup
            // completes at once there.
            base.setup(channel: channel, logger: logger).whenComplete { result in
                switch result {
                case .success(let installed): connections.run { await base.handle(value: installed, logger: logger) }
                case .failure(let error):
                    logger.error("The HTTP/1.1 handlers could not be set up: \(error)")
                    channel.close(promise: nil)
                }
            }
        }
        try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: FastPathHTTP1Channel.receiveBuffers)
        try channel.pipeline.syncOperations.addHandler(makeFastPath(fullPath))
    }
}

/// Starts a connection's full HTTP/1.1 path once, from the event loop, when the fast path first
/// hands over input (or an event the full path must see). A connection that ends first never
/// installs it.
final class FullPathStart: Sendable {
    private let install: @Sendable () -> Void
    private let started = Mutex(false)

    init(install: @escaping @Sendable () -> Void) {
        self.install = install
    }

    /// Installs the full path and starts its request loop, the first time.
    func begin() {
        let first = started.withLock { started -> Bool in
            defer { started = true }
            return !started
        }
        if first { install() }
    }
}
