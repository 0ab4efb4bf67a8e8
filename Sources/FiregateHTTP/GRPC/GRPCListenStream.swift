import FiregateBackend
import FiregateModel
import FiregateProto
import NIOCore
import NIOHPACK
import NIOHTTP2

/// A Listen call served on its connection's event loop, from its frames (see `GRPCFastPath`):
/// requests are read as their DATA arrives, commits are turned into responses by the same
/// `ListenTargets` as the task-based `FirestoreListenCall`, and a commit reaches the socket
/// without a task switch — a thousand streams on one document each cost a poll and a write,
/// not a task's wake-up.
///
/// The protocol is `FirestoreListenCall`'s: the head at once; the stream never ends OK on the
/// server's initiative (a network switch, the feed or a shutdown end it UNAVAILABLE); a
/// half-close ends it OK. Slow readers are bounded: while more than
/// `maxUnsentBytes` of responses wait for the network, the feed is not read (it keeps up to its
/// buffer, then resynchronises the stream).
///
/// Confined to the event loop; the handler calls it for the stream's frames and events.
final class GRPCListenStream {
    let stream: HTTP2StreamID
    private let service: FirestoreGRPCService
    private let ticket: GRPCCallTicket
    private let context: ChannelHandlerContext
    private let flush: () -> Void
    private var deframer = GRPCDeframer()
    private var targets: ListenTargets?
    private var subscription: FeedSubscription?
    private(set) var ended = false
    /// Response bytes written whose write has not completed (NIOHTTP2 holds frames past the
    /// stream's window; the socket holds what the peer has not read).
    private var unsentBytes = 0
    /// Request bytes read and not yet given back to the client as window.
    private var unacknowledgedBytes = 0
    /// Who listens: the targets are judged again with it when rules are loaded or changed.
    private let caller: RulesCaller
    /// What the feed calls when it has more: made once, given at every poll.
    private var wake: (@Sendable () -> Void)?
    private var waker: Waker?

    static let maxUnsentBytes = 256 * 1024
    static let windowUpdateThreshold = 16 * 1024

    init(stream: HTTP2StreamID, service: FirestoreGRPCService, ticket: GRPCCallTicket, context: ChannelHandlerContext, caller: RulesCaller,
         flush: @escaping () -> Void) {
        self.stream = stream
        self.caller = caller
        self.service = service
        self.ticket = ticket
        self.context = context
        self.flush = flush
    }

    /// Sends the head; a switch that drops the call from now on ends it UNAVAILABLE.
    func start() {
        context.write(NIOAny(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: service.responseHead)))), promise: nil)
        flush()
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        ticket.onTerminate { [loop = context.eventLoop] error in
            loop.execute { bound.value.end(error) }
        }
        // Woken through the loop's queue: a commit that wakes a thousand calls costs the
        // publishing thread one task per loop (docs/webchannel.md, "Fan-out").
        let waker = Waker(self), queue = service.wakeQueues.queue(for: context.eventLoop)
        self.waker = waker
        wake = { queue.wake(waker) }
    }

    /// A call's place in its loop's `EventLoopWakeQueue`, until the call stops.
    final class Waker: EventLoopWakeable, @unchecked Sendable {
        /// Touched only on the call's event loop.
        fileprivate var call: GRPCListenStream?

        fileprivate init(_ call: GRPCListenStream) {
            self.call = call
        }

        func drain() {
            guard let call else { return }
            call.after(call.ticket.latency) { call in call.drain() }
        }
    }

    /// Request bytes (`flowControlled` of the window, padding included).
    func received(_ bytes: ByteBuffer, flowControlled: Int, endStream: Bool) {
        guard !ended else { return }
        var bytes = bytes
        deframer.append(&bytes)
        unacknowledgedBytes += flowControlled
        let delay = ticket.latency
        do {
            while let message = try deframer.next() {
                let request = try GRPCDeframer.decode(message, as: Google_Firestore_V1_ListenRequest.self)
                after(delay) { stream in stream.handle(request) }
            }
        } catch {
            return after(delay) { stream in stream.end(error) }
        }
        if endStream {
            // A half-close is how a client stops listening: grpc-js's `call.end()` (an empty DATA
            // frame with END_STREAM), which both Node SDKs use to unsubscribe, then waits for the
            // status. The call ends OK once the requests before it are handled.
            let cut = !deframer.isEmpty
            after(delay) { stream in stream.end(cut ? .internal("The request ended inside a message.") : nil) }
        } else if unacknowledgedBytes >= GRPCListenStream.windowUpdateThreshold {
            context.write(NIOAny(HTTP2Frame(streamID: stream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))), promise: nil)
            unacknowledgedBytes = 0
            flush()
        }
    }

    private func handle(_ request: Google_Firestore_V1_ListenRequest) {
        guard !ended else { return }
        do {
            if targets == nil {
                let database = service.database(try FirestoreResourceName.database(request.database))
                let subscription = database.feed.subscribe(bufferLimit: service.listenOptions.bufferLimit)
                self.subscription = subscription
                targets = ListenTargets(database: database, startingAfter: subscription.startsAfter)
                targets!.access = ListenAccess(rules: service.backend.rules, caller: caller)
                targets!.timeline = ListenTimeline(service.backend.timelines.recorder(TimelineLane.connectionID(ticket.entryID)))
            }
            send(try targets!.handle(request))
            ticket.setListens(targets!.count)
            drain()
        } catch {
            end(error)
        }
    }

    /// Turns what the feed holds into responses while the network takes them; arms the wake-up
    /// when it holds nothing.
    func drain() {
        guard !ended, let subscription, targets != nil, let wake else { return }
        while !ended, unsentBytes <= GRPCListenStream.maxUnsentBytes {
            let (event, finished) = subscription.poll(orWake: wake)
            guard let event else {
                if finished { end(.cancelled("The stream was cancelled.")) }
                return
            }
            switch event {
            case .commit(let record): send(targets!.apply(record))
            case .overflow: send(targets!.resynchronise())
            case .closed(let error): end(FiregateError(.unavailable, error.message))
            case .heartbeat: send(targets!.revocations())
            }
        }
    }

    /// The responses in one DATA frame.
    private func send(_ responses: [ListenResponse]) {
        guard !responses.isEmpty else { return }
        var frames = ByteBuffer()
        do {
            for response in responses {
                var frame = try GRPCFraming.frame(response)
                frames.writeBuffer(&frame)
            }
        } catch {
            return end(error)
        }
        let size = frames.readableBytes
        unsentBytes += size
        let promise = context.eventLoop.makePromise(of: Void.self)
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        promise.futureResult.whenComplete { _ in
            let stream = bound.value
            stream.unsentBytes -= size
            if stream.unsentBytes + size > GRPCListenStream.maxUnsentBytes, stream.unsentBytes <= GRPCListenStream.maxUnsentBytes {
                stream.drain()
            }
        }
        context.write(NIOAny(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(frames))))), promise: promise)
        flush()
    }

    /// Ends the call with `status` in its trailers (nil is OK).
    func end(_ status: FiregateError?) {
        guard !ended else { return }
        stop(status)
        guard context.channel.isActive else { return }
        var trailers = GRPCFastPath.okTrailers
        if let status { trailers = GRPCFastPath.trailers(status) }
        context.write(NIOAny(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: trailers, endStream: true)))), promise: nil)
        flush()
    }

    /// The stream closed under the call (the client cancelled, the connection went away).
    func closed() {
        // After `end` the stream closes too (the trailers, then the client's END_STREAM or reset).
        guard !ended else { return }
        stop(.cancelled("The client cancelled the stream."))
    }

    private func stop(_ status: FiregateError?) {
        ended = true
        waker?.call = nil
        subscription?.cancel()
        ticket.end()
        service.connections.finished(.listen, status: status)
        service.connections.registry.countCall(ticket.entryID, method: "Listen")
    }

    /// Runs `body` after the switch's latency (at once without one), in order.
    private func after(_ delay: Duration, _ body: @escaping (GRPCListenStream) -> Void) {
        guard delay > .zero else { return body(self) }
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay.nanoseconds))) { body(bound.value) }
    }
}
