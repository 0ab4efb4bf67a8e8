import FiregateBackend
import FiregateModel
import HTTPTypes
import NIOCore

/// Where an `EventLoopStream`'s frames come from: a document listen's feed subscription or a
/// tree stream's subscription.
protocol EventLoopStreamSource: AnyObject {
    var surface: Surface { get }
    /// The head's header fields (content type and the rest of the full path's).
    var headers: HTTPFields { get }
    /// Frames ready now, or none after arming `wake` (called once, from any thread, when more
    /// come); `.ended` once the source is done, with the reason to send first if any.
    func poll(wake: @escaping @Sendable () -> Void) -> EventLoopStreamPoll
    /// Ends the source as the server shuts down: what it sends last.
    func shutDown() -> [ByteBuffer]
    /// Stops the source: no more frames, subscriptions released.
    func stop()
}

/// What serves the connection an `EventLoopStream` writes to.
protocol EventLoopStreamOwner: AnyObject {
    /// The stream ended on its own; the connection is the owner's again.
    func streamEnded(context: ChannelHandlerContext)
}

enum EventLoopStreamPoll {
    /// Frames to write, each as one chunk.
    case frames([ByteBuffer])
    /// Chunks already in HTTP's chunked coding (`EventLoopStream.chunk`), which many streams
    /// may write from one buffer. `waiting`: the source holds nothing more and armed its
    /// wake-up already, so the stream does not look again.
    case chunks([ByteBuffer], waiting: Bool)
    case waiting
    case ended(last: ByteBuffer?)
}

/// An event stream served on its connection's event loop (see `ConnectionFastPath`): the
/// source wakes it, it polls the source and writes each frame as a chunk. No task and no body
/// writer stay behind an idle stream, only its channel (docs/benchmarks.md, idle streams), and
/// an event reaches the socket without a task switch. The frames are the full path's.
///
/// Confined to the event loop. It ends with its source (a reset's `event: error`, a tree
/// stream's `cancel`), when the client hangs up or half-closes, or when the server shuts down.
final class EventLoopStream {
    private let source: any EventLoopStreamSource
    private let metrics: ServerMetrics
    private(set) var ended = false
    /// The channel refused more output: the next frames wait in the source (up to its bound,
    /// then a reset or resync), and writing resumes when the channel drains.
    private var waitingForWritability = false
    /// Told when the stream ends on its own (its source ended), after its last chunk. The owner
    /// holds the stream and outlives it (a reference, not a closure: one allocation less for
    /// each of the many idle streams).
    private unowned let owner: any EventLoopStreamOwner

    /// `Firegate-Replica` in the head, when replicas share a PostgreSQL store.
    private let replica: String?

    private let wakeQueue: EventLoopWakeQueue
    /// What the source calls when it has more: made once, given at every look.
    private var wake: (@Sendable () -> Void)?
    private var waker: Waker?
    /// The connection's channel, asked before each write whether it takes more (through the
    /// context, each look found it in the pipeline again: a lookup and a retain per write).
    private var channel: (any Channel)?

    init(_ source: any EventLoopStreamSource, owner: any EventLoopStreamOwner, metrics: ServerMetrics, wakeQueue: EventLoopWakeQueue,
         replica: String? = nil) {
        self.source = source
        self.owner = owner
        self.metrics = metrics
        self.wakeQueue = wakeQueue
        self.replica = replica
    }

    /// A stream's place in its loop's `EventLoopWakeQueue`. It holds the stream until the
    /// stream ends, when `abandon` lets it go (a source may keep the wake-up longer).
    final class Waker: EventLoopWakeable, @unchecked Sendable {
        /// Touched only on the stream's event loop.
        fileprivate var target: (stream: EventLoopStream, context: ChannelHandlerContext)?

        fileprivate init(_ stream: EventLoopStream, context: ChannelHandlerContext) {
            target = (stream, context)
        }

        /// On the loop: the stream looks at its source.
        func drain() {
            guard let (stream, context) = target else { return }
            stream.drain(context: context)
        }
    }

    /// The response head; then frames as the source has them.
    func start(context: ChannelHandlerContext) {
        let waker = Waker(self, context: context)
        let queue = wakeQueue
        self.waker = waker
        wake = { queue.wake(waker) }
        channel = context.channel
        metrics.streamOpened(source.surface)
        var head = context.channel.allocator.buffer(capacity: 256)
        head.writeStaticString("HTTP/1.1 200 OK\r\n")
        for field in source.headers {
            head.writeString("\(field.name.rawName): \(field.value)\r\n")
        }
        head.writeStaticString("Date: ")
        head.writeString(HTTPDate.format(HTTPDate.currentSecond()))
        head.writeStaticString("\r\nServer: ")
        head.writeString(FiregateServer.serverName)
        if let replica {
            head.writeStaticString("\r\nFiregate-Replica: ")
            head.writeString(replica)
        }
        head.writeStaticString("\r\ntransfer-encoding: chunked\r\n\r\n")
        context.write(NIOAny(head), promise: nil)
        drain(context: context)
        if !ended { context.flush() }
    }

    /// Writes what the source holds while the channel takes it; arms the wake-up when it holds
    /// nothing.
    func drain(context: ChannelHandlerContext) {
        guard !ended, let wake, let channel else { return }
        var wrote = false
        defer { if wrote && !ended { context.flush() } }
        while !ended {
            guard channel.isWritable else {
                waitingForWritability = true
                return
            }
            let poll = source.poll(wake: wake)
            switch poll {
            case .frames(let frames):
                for frame in frames { writeChunk(frame, context: context) }
                wrote = wrote || !frames.isEmpty
            case .chunks(let chunks, let waiting):
                for chunk in chunks { context.write(NIOAny(chunk), promise: nil) }
                wrote = wrote || !chunks.isEmpty
                if waiting { return }
            case .waiting:
                return
            case .ended(let last):
                end(context: context, last: last)
                owner.streamEnded(context: context)
            }
        }
    }

    func writabilityChanged(context: ChannelHandlerContext) {
        guard waitingForWritability, context.channel.isWritable else { return }
        waitingForWritability = false
        drain(context: context)
    }

    /// Ends the stream: `last` first when there is one, then the last chunk (unless the
    /// connection is gone). The source stops.
    func end(context: ChannelHandlerContext, last: ByteBuffer? = nil) {
        guard !ended else { return }
        abandon()
        guard context.channel.isActive else { return }
        if let last { writeChunk(last, context: context) }
        context.writeAndFlush(NIOAny(ByteBuffer(staticString: "0\r\n\r\n")), promise: nil)
    }

    /// Ends the stream as the server shuts down: what the source sends last, then the last
    /// chunk.
    func shutDown(context: ChannelHandlerContext) {
        guard !ended else { return }
        let last = source.shutDown()
        abandon()
        guard context.channel.isActive else { return }
        for frame in last { writeChunk(frame, context: context) }
        context.writeAndFlush(NIOAny(ByteBuffer(staticString: "0\r\n\r\n")), promise: nil)
    }

    /// Ends the stream as the channel went away: nothing more is written.
    func abandon() {
        guard !ended else { return }
        ended = true
        waker?.target = nil
        channel = nil
        source.stop()
        metrics.streamClosed(source.surface)
    }

    /// One write per chunk (size line, frame, CRLF in one buffer): a fan-out writes a chunk to
    /// each of many channels, and each write passes the pipeline.
    private func writeChunk(_ frame: ByteBuffer, context: ChannelHandlerContext) {
        context.write(NIOAny(EventLoopStream.chunk(frame)), promise: nil)
    }

    /// `frame` as one chunk of HTTP's chunked coding: size line, frame, CRLF in one buffer.
    static func chunk(_ frame: ByteBuffer) -> ByteBuffer {
        var chunk = ByteBuffer()
        chunk.reserveCapacity(frame.readableBytes + 12)
        chunk.writeString(String(frame.readableBytes, radix: 16))
        chunk.writeStaticString("\r\n")
        chunk.writeImmutableBuffer(frame)
        chunk.writeStaticString("\r\n")
        return chunk
    }
}
