import FiregateBackend
import FiregateModel
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1

/// The requests that make up most of a server's traffic, answered straight from the
/// connection's bytes (see `SimpleRequest`): no HTTP/1.1 parser, no task, no router, no header
/// fields to build — the per-request work of a static file server (docs/benchmarks.md). What
/// each request gets is `FastRouter`'s choice (`FastRoute`); how the connection goes on is
/// `FastPathStateMachine`'s; the answers are in `ConnectionFastPath+Documents` and `+Tree`.
/// The answer is the one the full path gives: status, headers, body, metrics and the log line.
///
/// It sits in front of the HTTP/1.1 decoder. The first request on a connection it does not
/// take (another route or parameter, a document body to gzip, a header it does not take) hands
/// that request and everything after it to the full path for the rest of the connection:
/// request order is kept because nothing is answered here after that.
final class ConnectionFastPath: ChannelDuplexHandler, RemovableChannelHandler, EventLoopStreamOwner {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let services: FastPathServices
    var backend: Backend { services.backend }
    var rules: FastPathRules { services.rules }
    var documents: DocumentRoutes { services.documents }
    var metrics: ServerMetrics { services.metrics }
    var machine = FastPathStateMachine()
    var router: FastRouter
    /// Whether the connection's full path was installed.
    private var fullPathStarted = false
    /// Input not handled yet: a head still arriving, or requests behind one being answered.
    var unread: ByteBuffer?
    var needsFlush = false
    var date = (second: -1, text: "")
    /// The stream this connection serves, while it lasts.
    var listening: EventLoopStream?

    init(_ services: FastPathServices) {
        self.services = services
        router = FastRouter(defaultNamespace: services.backend.defaultProject)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let action = machine.channelRead()
        if case .forward = action { return context.fireChannelRead(data) }
        var buffer = unwrapInboundIn(data)
        if var earlier = unread {
            earlier.writeBuffer(&buffer)
            buffer = earlier
        }
        unread = buffer
        switch action {
        case .bufferWhileStreaming:
            // Nothing is answered behind a stream; a client that keeps sending is cut off.
            if buffer.readableBytes > SimpleRequest.maxHeadLength { context.close(promise: nil) }
        case .process: process(context: context, inRead: true)
        case .buffer, .forward: break
        }
    }

    /// Answers the complete requests at the front of `unread`, in order, while the connection
    /// serves; what it does not take goes to the full path with everything after it. Outside a
    /// read (after an answer prepared off the loop) that is followed by a read-complete, which is
    /// when the layers behind take it up.
    func process(context: ChannelHandlerContext, inRead: Bool) {
        while var buffer = unread, buffer.readableBytes > 0, machine.state == .serving {
            let started = ContinuousClock.now
            if let sockets = services.sockets {
                switch RealtimeUpgradeRequest.parse(buffer) {
                case .incomplete: return
                case .other: break
                case .request(let upgrade):
                    // Everything after the head is the socket's: WebSocket frames.
                    buffer.moveReaderIndex(forwardBy: upgrade.length)
                    unread = nil
                    machine.handedOver()
                    sockets.accept(upgrade, context: context)
                    if buffer.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(buffer)) }
                    return
                }
            }
            guard services.enabled else { break }
            let parse = SimpleRequest.parse(buffer)
            if case .incomplete = parse { return }
            guard case .simple(let request) = parse else { break }
            let target = String(decoding: buffer.getBytes(at: buffer.readerIndex + request.path.lowerBound, length: request.path.count) ?? [],
                                as: UTF8.self)
            let query = request.query.flatMap { buffer.getString(at: buffer.readerIndex + $0.lowerBound, length: $0.count) }
            var route = router.route(request.method, target: target, query: query, acceptsEventStream: request.acceptsEventStream,
                                     documentsLoaded: backend.documents.isLoaded, rulesActive: backend.rules.isActive)
            if request.origin != nil, !route.answersPages { route = .fullPath }
            guard serve(route, request, in: &buffer, path: target, started: started, context: context) else { break }
        }
        guard machine.state == .serving, let rest = unread, rest.readableBytes > 0 else {
            if unread?.readableBytes == 0 { unread = nil }
            return
        }
        handOver(context: context)
        if !inRead { context.fireChannelReadComplete() }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context: context)
        context.fireChannelReadComplete()
    }

    func flushIfNeeded(context: ChannelHandlerContext) {
        guard needsFlush else { return }
        needsFlush = false
        context.flush()
    }

    func read(context: ChannelHandlerContext) {
        if machine.shouldRead(inputWaiting: (unread?.readableBytes ?? 0) > 0) { context.read() }
    }

    /// The connection's input ended with a head still arriving: the full parser reports it.
    func channelInactive(context: ChannelHandlerContext) {
        listening?.abandon()
        listening = nil
        machine.streamEnded()
        handOver(context: context)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event {
            inputClosed(machine.inputClosed(), context: context)
        } else if event is ChannelShouldQuiesceEvent {
            quiesce(machine.quiesce(), context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// The client half-closed: what it sent before still gets its answers, so the full path
    /// hears of it only after the answer under way (if any); a client that half-closes a
    /// stream has hung up.
    func inputClosed(_ action: FastPathStateMachine.InputClosedAction, context: ChannelHandlerContext) {
        switch action {
        case .endStream:
            listening?.end(context: context)
            context.close(promise: nil)
        case .forward:
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        case .wait:
            break
        case .handOver:
            handOver(context: context, evenIfEmpty: true)
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
    }

    /// Until the full path has the connection, a shutdown is this handler's to carry out: an
    /// idle connection closes now, one being answered once its answer is out, a stream says so.
    func quiesce(_ action: FastPathStateMachine.QuiesceAction, context: ChannelHandlerContext) {
        switch action {
        case .shutDownStream:
            listening?.shutDown(context: context)
            context.close(promise: nil)
        case .forward:
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        case .close:
            flushIfNeeded(context: context)
            context.close(promise: nil)
        case .none:
            break
        }
    }

    /// From now on the full path has the connection: it gets what waits, and every byte after.
    /// With nothing waiting it starts only if `evenIfEmpty` (an event it must see), so a
    /// connection that just ends never installs it. Returns whether anything waited.
    @discardableResult
    func handOver(context: ChannelHandlerContext, evenIfEmpty: Bool = false) -> Bool {
        let waiting = (unread?.readableBytes ?? 0) > 0
        guard machine.state != .passThrough, waiting || evenIfEmpty else { return false }
        machine.handedOver()
        if !fullPathStarted {
            fullPathStarted = true
            services.installFullPath(context.channel)
        }
        guard waiting, let unread else { return false }
        self.unread = nil
        context.fireChannelRead(wrapInboundOut(unread))
        return true
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        listening?.writabilityChanged(context: context)
        context.fireChannelWritabilityChanged()
    }
}
