import FiregateRealtime
import NIOCore
import NIOWebSocket

/// The end of a Realtime Database socket's pipeline: WebSocket frames in, to its session, on
/// the connection's event loop (no task per socket, so an idle socket costs little).
///
/// WebSocket pings are answered here; text messages go to the session (after the network
/// switch's latency); a binary frame is a protocol error. A socket silent for `idleTimeout`
/// is closed, like one the client or a switch closed: the session then runs its onDisconnect.
final class RealtimeSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let session: RealtimeSession
    let transport: RealtimeSocketTransport
    let closed: @Sendable (String) -> Void

    init(session: RealtimeSession, transport: RealtimeSocketTransport, closed: @escaping @Sendable (String) -> Void) {
        self.session = session
        self.transport = transport
        self.closed = closed
    }

    func handlerAdded(context: ChannelHandlerContext) {
        transport.attach(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var payload = frame.unmaskedData
            let bytes = payload.readBytes(length: payload.readableBytes) ?? []
            let session = self.session
            transport.after(transport.latency()) { session.receive(bytes) }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            break
        case .connectionClose:
            transport.close(reason: "The client closed the connection.")
        default:
            transport.close(code: .unacceptableData, reason: "Binary frames are not part of the protocol: send JSON text.")
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            transport.close(code: .goingAway, reason: "No message from the client for too long (the SDK pings; this one went silent).")
            return
        }
        if event is ChannelShouldQuiesceEvent {
            transport.close(code: .goingAway, reason: "The server is shutting down.")
            return
        }
        if case ChannelEvent.inputClosed = event {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        transport.close(code: .protocolError, reason: "Protocol error: \(error)")
    }

    func channelInactive(context: ChannelHandlerContext) {
        session.connectionClosed()
        closed(transport.closeReason ?? "The connection closed.")
        context.fireChannelInactive()
    }
}
