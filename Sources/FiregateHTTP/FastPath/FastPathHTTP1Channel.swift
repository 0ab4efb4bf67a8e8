import FiregateBackend
import HummingbirdCore
import Logging
import NIOCore

/// Hummingbird's HTTP/1.1 channel with `ConnectionFastPath` in front of its parser (behind TLS
/// when the server speaks HTTPS, since TLS wraps this setup).
///
/// Hummingbird's handlers are put in the pipeline, and its request loop started (`OpenConnections`),
/// only when the fast path first hands it input: a connection the fast path serves alone — a
/// poller, an open stream — holds neither their state nor a task (docs/benchmarks.md's idle-stream
/// memory).
struct FastPathHTTP1Channel: Sendable {
    let services: FastPathServices

    /// The first read of a connection is small (a request head; a socket's requests and pings):
    /// a smaller first buffer than NIO's 2 KiB, since every connection keeps its read buffer for
    /// the next read (an idle stream or socket holds it for its whole life); it grows as reads fill it.
    static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 65536)

    /// The full path's installation for `services`: Hummingbird's setup (which completes at
    /// once on the event loop), then its request loop under `connections`.
    static func installer(_ base: HTTP1Channel, connections: OpenConnections, logger: Logger) -> @Sendable (any Channel) -> Void {
        { channel in
            base.setup(channel: channel, logger: logger).whenComplete { result in
                switch result {
                case .success(let installed): connections.run { await base.handle(value: installed, logger: logger) }
                case .failure(let error):
                    logger.error("The HTTP/1.1 handlers could not be set up: \(error)")
                    channel.close(promise: nil)
                }
            }
        }
    }

    /// Puts the fast path in `channel`'s pipeline; on the event loop. The channel already reads
    /// into `receiveBuffers` (`ProtocolSniffingChannel` set them for its first read; setting
    /// them again would keep another boxed allocator per connection).
    func setup(channel: any Channel) throws {
        try channel.pipeline.syncOperations.addHandler(ConnectionFastPath(services))
    }
}
