import FiregateBackend
import HummingbirdCore
import Logging
import NIOCore
import Synchronization

/// Hummingbird's HTTP/1.1 child channel with `ConnectionFastPath` in front of its parser
/// (behind TLS when the server speaks HTTPS, since TLS wraps this channel's setup).
///
/// The connection's task starts Hummingbird's request loop only when the fast path first hands
/// it input (or the connection ends): a task keeps the frame memory of its deepest call for its
/// whole life, so a connection the fast path serves alone — a poller, an open `:listen`
/// stream — holds only the task's first small frame (DESIGN §3's idle-stream memory).
struct FastPathHTTP1Channel: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let base: HTTP1Channel.Value
        let fullPath: FullPathStart
        var channel: any Channel { base.channel }
    }

    let base: HTTP1Channel
    let makeFastPath: @Sendable (FullPathStart) -> ConnectionFastPath

    /// The first read of a connection is small (a request head): a smaller first buffer than
    /// NIO's 2 KiB, which every connection keeps for its next read; it grows as reads fill it.
    static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let fullPath = FullPathStart()
        do {
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: FastPathHTTP1Channel.receiveBuffers)
            try channel.pipeline.syncOperations.addHandler(makeFastPath(fullPath))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return base.setup(channel: channel, logger: logger).map { Value(base: $0, fullPath: fullPath) }
    }

    func handle(value: Value, logger: Logger) async {
        await value.fullPath.wait()
        await base.handle(value: value.base, logger: logger)
    }
}

/// Tells a connection's task to start the full HTTP/1.1 path: once, from the event loop, when
/// the fast path hands over input or the connection ends (or when the task is cancelled).
final class FullPathStart: Sendable {
    private struct State {
        var started = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func begin() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.started = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let started = state.withLock { state -> Bool in
                    if !state.started { state.waiter = continuation }
                    return state.started
                }
                if started { continuation.resume() }
            }
        } onCancel: {
            begin()
        }
    }
}
