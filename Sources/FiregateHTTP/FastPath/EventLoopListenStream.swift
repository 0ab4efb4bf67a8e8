import FiregateBackend
import FiregateModel
import NIOCore

/// A document `:listen` stream served on its connection's event loop (see `ConnectionFastPath`):
/// the feed wakes it, it polls its subscription and writes each frame as a chunk. No task and
/// no body writer stay behind an idle stream, only its channel (DESIGN §3's idle-stream memory),
/// and a commit reaches the socket without a task switch. The frames are `DocumentListenStream`'s,
/// as on the full path.
///
/// Confined to the event loop. It ends with the feed (a reset's `event: error`), when the
/// client hangs up or half-closes, or when the server shuts down (`event: error`, 503).
final class EventLoopListenStream {
    private var stream: DocumentListenStream
    private let subscription: FeedSubscription
    private let first: ByteBuffer?
    private let metrics: ServerMetrics
    private(set) var ended = false
    /// The channel refused more output: the next frames wait in the subscription (up to its
    /// buffer, then one reset), and writing resumes when the channel drains.
    private var waitingForWritability = false
    /// Told when the stream ends on its own (the feed closed it), after its last chunk.
    var onEnd: (() -> Void)?

    init(_ stream: DocumentListenStream, metrics: ServerMetrics) {
        var stream = stream
        (subscription, first) = stream.open()
        self.stream = stream
        self.metrics = metrics
    }

    /// The response head and the first frame; then events as the feed delivers them.
    func start(context: ChannelHandlerContext) {
        metrics.streamOpened(.documents)
        var head = context.channel.allocator.buffer(capacity: 256)
        head.writeStaticString("HTTP/1.1 200 OK\r\n")
        for field in ServerSentEvents.headers {
            head.writeString("\(field.name.rawName): \(field.value)\r\n")
        }
        head.writeStaticString("Date: ")
        head.writeString(HTTPDate.format(HTTPDate.currentSecond()))
        head.writeStaticString("\r\nServer: ")
        head.writeString(FiregateServer.serverName)
        head.writeStaticString("\r\ntransfer-encoding: chunked\r\n\r\n")
        context.write(NIOAny(head), promise: nil)
        if let first { writeChunk(first, context: context) }
        context.flush()
        stream.ticker.register(subscription)
        drain(context: context)
    }

    /// Writes what the subscription holds while the channel takes it; arms the wake-up when
    /// it holds nothing.
    func drain(context: ChannelHandlerContext) {
        guard !ended else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let loop = context.eventLoop
        var wrote = false
        defer { if wrote && !ended { context.flush() } }
        while !ended {
            guard context.channel.isWritable else {
                waitingForWritability = true
                return
            }
            let (event, finished) = subscription.poll {
                loop.execute {
                    let (stream, context) = bound.value
                    stream.drain(context: context)
                }
            }
            guard let event else {
                if finished { endOnItsOwn(context: context, error: nil) }
                return
            }
            switch event {
            case .heartbeat:
                writeChunk(ServerSentEvents.keepAlive, context: context)
                wrote = true
            case .closed(let error):
                endOnItsOwn(context: context, error: error)
            case .commit, .overflow:
                if let frame = stream.frame(for: event) {
                    writeChunk(frame, context: context)
                    wrote = true
                }
            }
        }
    }

    func writabilityChanged(context: ChannelHandlerContext) {
        guard waitingForWritability, context.channel.isWritable else { return }
        waitingForWritability = false
        drain(context: context)
    }

    /// Ends the stream: an `event: error` first when there is a reason, then the last chunk
    /// (unless the connection is gone). The subscription and keep-alives stop.
    func end(context: ChannelHandlerContext, error: FiregateError? = nil) {
        guard !ended else { return }
        abandon()
        guard context.channel.isActive else { return }
        if let error { writeChunk(ServerSentEvents.frame(event: "error", json: JSON.errorBody(error)), context: context) }
        context.writeAndFlush(NIOAny(ByteBuffer(staticString: "0\r\n\r\n")), promise: nil)
    }

    private func endOnItsOwn(context: ChannelHandlerContext, error: FiregateError?) {
        let onEnd = self.onEnd
        end(context: context, error: error)
        onEnd?()
    }

    /// Ends the stream as the channel went away: nothing more is written.
    func abandon() {
        guard !ended else { return }
        ended = true
        onEnd = nil
        stream.ticker.unregister(subscription)
        subscription.cancel()
        metrics.streamClosed(.documents)
    }

    private func writeChunk(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        var size = context.channel.allocator.buffer(capacity: 12)
        size.writeString(String(frame.readableBytes, radix: 16))
        size.writeStaticString("\r\n")
        context.write(NIOAny(size), promise: nil)
        context.write(NIOAny(frame), promise: nil)
        context.write(NIOAny(ByteBuffer(staticString: "\r\n")), promise: nil)
    }
}
