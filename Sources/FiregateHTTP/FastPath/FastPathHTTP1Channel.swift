import FiregateBackend
import HummingbirdCore
import Logging
import NIOCore
import Synchronization

/// Hummingbird's HTTP/1.1 child channel with `ConnectionFastPath` in front of its parser
/// (behind TLS when the server speaks HTTPS, since TLS wraps this channel's setup).
///
/// Hummingbird's handlers are put in the pipeline, and its request loop started, only when the
/// fast path first hands it input: a connection the fast path serves alone — a poller, an open
/// stream — holds neither their state nor more than its task's first small frame (DESIGN §3's
/// idle-stream memory).
struct FastPathHTTP1Channel: ServerChildChannel {
    struct Value: ServerChildChannelValue {
        let channel: any Channel
        let fullPath: FullPathStart
    }

    let base: HTTP1Channel
    let makeFastPath: @Sendable (FullPathStart) -> ConnectionFastPath

    /// The first read of a connection is small (a request head): a smaller first buffer than
    /// NIO's 2 KiB, which every connection keeps for its next read; it grows as reads fill it.
    static let receiveBuffers = AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let base = self.base
        let fullPath = FullPathStart { () -> HTTP1Channel.Value? in
            // On the event loop, before the fast path passes anything on: Hummingbird's setup
            // completes at once there.
            var installed: HTTP1Channel.Value?
            base.setup(channel: channel, logger: logger).whenSuccess { installed = $0 }
            return installed
        }
        do {
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: FastPathHTTP1Channel.receiveBuffers)
            try channel.pipeline.syncOperations.addHandler(makeFastPath(fullPath))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.eventLoop.makeSucceededFuture(Value(channel: channel, fullPath: fullPath))
    }

    func handle(value: Value, logger: Logger) async {
        guard let installed = await value.fullPath.wait() else { return }
        await base.handle(value: installed, logger: logger)
    }
}

/// Starts a connection's full HTTP/1.1 path: once, from the event loop, when the fast path
/// first hands over input (or an event the full path must see). A connection that ends first
/// never installs it.
final class FullPathStart: Sendable {
    private struct State {
        var decided = false
        var installed: HTTP1Channel.Value?
        var waiter: CheckedContinuation<HTTP1Channel.Value?, Never>?
    }

    private let install: @Sendable () -> HTTP1Channel.Value?
    private let state = Mutex(State())

    init(install: @escaping @Sendable () -> HTTP1Channel.Value?) {
        self.install = install
    }

    /// Whether the full path's handlers are in the pipeline.
    var isInstalled: Bool { state.withLock { $0.installed != nil } }

    /// Installs the full path (on the event loop) and starts its request loop.
    func begin() {
        guard state.withLock({ !$0.decided }) else { return }
        let installed = install()
        decide(installed)
    }

    /// The connection ended without needing the full path.
    func abandon() { decide(nil) }

    private func decide(_ installed: HTTP1Channel.Value?) {
        let waiter = state.withLock { state -> CheckedContinuation<HTTP1Channel.Value?, Never>? in
            guard !state.decided else { return nil }
            state.decided = true
            state.installed = installed
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: installed)
    }

    func wait() async -> HTTP1Channel.Value? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<HTTP1Channel.Value?, Never>) in
                let decided = state.withLock { state -> HTTP1Channel.Value?? in
                    if state.decided { return .some(state.installed) }
                    state.waiter = continuation
                    return nil
                }
                if let decided { continuation.resume(returning: decided) }
            }
        } onCancel: {
            abandon()
        }
    }
}
