import FiregateRealtime
import NIOCore

/// A Realtime Database socket's one handler, on the connection's event loop (no task per
/// socket, so an idle socket costs little): WebSocket frames in (`WebSocketFrameReader`), text
/// messages to the session after the network switch's latency, pings answered here. A binary
/// frame or broken framing closes the socket with the reason; so does `idleTimeout` of silence,
/// like a close by the client or a switch: the session then runs its onDisconnect.
final class RealtimeSocketHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let session: RealtimeSession
    let transport: RealtimeSocketTransport
    let idleTimeout: TimeAmount
    let closed: @Sendable (String) -> Void
    private var reader: WebSocketFrameReader
    private var lastRead = NIODeadline.now()
    private var idleCheck: Scheduled<Void>?

    init(session: RealtimeSession, transport: RealtimeSocketTransport, maxMessageBytes: Int, idleTimeout: TimeAmount,
         closed: @escaping @Sendable (String) -> Void) {
        self.session = session
        self.transport = transport
        self.idleTimeout = idleTimeout
        self.closed = closed
        reader = WebSocketFrameReader(maxMessageBytes: maxMessageBytes)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        transport.attach(context)
        scheduleIdleCheck(context: context, at: lastRead + idleTimeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastRead = .now()
        let session = self.session, transport = self.transport
        reader.read(unwrapInboundIn(data)) { event in
            switch event {
            case .text(let bytes):
                transport.after(transport.latency()) { session.receive(bytes) }
            case .ping(let payload):
                context.writeAndFlush(wrapOutboundOut(WebSocketFrameWriter.pong(payload, allocator: context.channel.allocator)), promise: nil)
            case .pong:
                break
            case .close:
                transport.close(reason: "The client closed the connection.")
            case .binary:
                transport.close(code: WebSocketFrameReader.Code.unacceptableData, reason: "Binary frames are not part of the protocol: send JSON text.")
            case .failure(let code, let reason):
                transport.close(code: code, reason: reason)
            }
        }
    }

    /// One timer per socket, moved on lazily: it fires `idleTimeout` after the last read it knows of.
    private func scheduleIdleCheck(context: ChannelHandlerContext, at deadline: NIODeadline) {
        idleCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            let due = lastRead + idleTimeout
            if due <= .now() {
                transport.close(code: WebSocketFrameReader.Code.goingAway,
                                reason: "No message from the client for too long (the SDK pings; this one went silent).")
            } else {
                scheduleIdleCheck(context: context, at: due)
            }
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent {
            transport.close(code: WebSocketFrameReader.Code.goingAway, reason: "The server is shutting down.")
            return
        }
        if case ChannelEvent.inputClosed = event {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        transport.close(code: WebSocketFrameReader.Code.protocolError, reason: "Connection error: \(error)")
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
        transport.detach()
        session.connectionClosed()
        closed(transport.closeReason ?? "The connection closed.")
        context.fireChannelInactive()
    }
}
