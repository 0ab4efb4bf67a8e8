import FiregateRealtime
import NIOCore
import Synchronization

/// A session's way out onto its WebSocket, callable from any thread: each message becomes one
/// text frame, in the order sent, held back by the network switch's latency, and bounded — a
/// client that stops reading is disconnected once `maxBacklogBytes` wait unwritten.
final class RealtimeSocketTransport: RealtimeTransport, Sendable {
    private struct State {
        /// When the last delayed frame goes out: later ones never overtake it.
        var lastDue = NIODeadline.uptimeNanoseconds(0)
        var backlogBytes = 0
        var closeReason: String?
    }

    let channel: any Channel
    /// The socket handler's context: frames are written from there (the HTTP/1.1 handlers
    /// behind it in the pipeline must not see them).
    private let context: NIOLoopBoundBox<ChannelHandlerContext?>
    let maxBacklogBytes: Int
    /// The delay every frame takes each way (the network switch's `latencyMs`).
    let latency: @Sendable () -> Duration
    private let state = Mutex(State())

    init(channel: any Channel, maxBacklogBytes: Int, latency: @escaping @Sendable () -> Duration) {
        self.channel = channel
        context = NIOLoopBoundBox(nil, eventLoop: channel.eventLoop)
        self.maxBacklogBytes = maxBacklogBytes
        self.latency = latency
    }

    /// Called by the socket handler when it joins the pipeline, on the event loop.
    func attach(_ context: ChannelHandlerContext) { self.context.value = context }

    /// Called by the socket handler when the connection is gone, on the event loop: the context
    /// holds the handler, which holds this transport — kept, the pair (and the session) would
    /// outlive every closed socket.
    func detach() { context.value = nil }

    /// Writes `frame` from the socket handler's place; on the event loop.
    private func write(_ frame: ByteBuffer) -> EventLoopFuture<Void> {
        guard let context = context.value else { return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
        return context.writeAndFlush(NIOAny(frame))
    }

    /// Why the server closed the connection, if it did.
    var closeReason: String? { state.withLock { $0.closeReason } }

    func send(_ text: [UInt8]) {
        let count = text.count
        let overflow = state.withLock { state -> Bool in
            state.backlogBytes += count
            return state.backlogBytes > maxBacklogBytes && state.closeReason == nil
        }
        if overflow {
            close(reason: "The client did not read its data: more than \(maxBacklogBytes) bytes waited to be sent.")
            return
        }
        let channel = self.channel
        after(latency()) { [self] in
            write(WebSocketFrameWriter.text(text, allocator: channel.allocator)).whenComplete { _ in self.state.withLock { $0.backlogBytes -= count } }
        }
    }

    /// Runs `work` on the event loop once `delay` passed, after everything delayed before it.
    func after(_ delay: Duration, _ work: @escaping @Sendable () -> Void) {
        let now = NIODeadline.now()
        let due = state.withLock { state -> NIODeadline? in
            let wanted = now + .nanoseconds(Int64(delay.components.seconds * 1_000_000_000 + delay.components.attoseconds / 1_000_000_000))
            guard wanted > now || state.lastDue > now else { return nil }
            state.lastDue = max(wanted, state.lastDue)
            return state.lastDue
        }
        if let due {
            channel.eventLoop.scheduleTask(deadline: due, work)
        } else if channel.eventLoop.inEventLoop {
            work()
        } else {
            channel.eventLoop.execute(work)
        }
    }

    /// Sends a close frame with `reason` (cut to what a close frame holds) and closes.
    func close(reason: String) {
        close(code: WebSocketFrameReader.Code.normal, reason: reason)
    }

    func close(code: UInt16, reason: String) {
        let first = state.withLock { state -> Bool in
            guard state.closeReason == nil else { return false }
            state.closeReason = reason
            return true
        }
        guard first else { return }
        let channel = self.channel
        channel.eventLoop.execute { [self] in
            write(WebSocketFrameWriter.close(code: code, reason: reason, allocator: channel.allocator)).whenComplete { _ in
                channel.close(promise: nil)
            }
        }
    }
}
