import FiregateBackend
import HTTPTypes
import NIOCore

/// A tree location's Realtime Database event stream for an `EventLoopStream`: the frames its
/// namespace queues (the first `put`, later `put`/`patch`, keep-alives, a resync when the
/// reader fell behind, a `cancel`), coalesced as the full path does.
final class TreeStreamSource: EventLoopStreamSource {
    private let subscription: TreeStreamSubscription
    private let tree: TreeBackend

    init(_ subscription: TreeStreamSubscription, tree: TreeBackend) {
        self.subscription = subscription
        self.tree = tree
    }

    var surface: Surface { .tree }

    var headers: HTTPFields { TreeEventStreamResponse.headers }

    func poll(wake: @escaping @Sendable () -> Void) -> EventLoopStreamPoll {
        let (frames, finished) = subscription.poll(orWake: wake)
        if !frames.isEmpty {
            // One write for everything queued, as the full path coalesces it.
            var buffer = ByteBuffer()
            for frame in frames { buffer.writeBytes(frame.bytes) }
            return .frames([buffer])
        }
        return finished ? .ended(last: nil) : .waiting
    }

    /// The full path sends what is queued, then ends.
    func shutDown() -> [ByteBuffer] {
        subscription.finish()
        var buffer = ByteBuffer()
        for frame in subscription.takeQueued() { buffer.writeBytes(frame.bytes) }
        return buffer.readableBytes > 0 ? [buffer] : []
    }

    func stop() {
        subscription.finish()
        let (tree, subscription) = (tree, subscription)
        Task { await tree.unsubscribe(subscription) }
    }
}
