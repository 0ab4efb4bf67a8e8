import NIOCore

/// The whole pipeline of a connection that opened with `GET /.ws`, until its head is read: then
/// `RealtimeSockets` answers it (the 101 and the socket's handlers behind this one, or an error),
/// this handler hands on what followed the head and leaves.
final class RealtimeUpgradeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let sockets: RealtimeSockets
    private var buffered: ByteBuffer?
    /// A head that does not arrive within the sockets' idle timeout ends the connection.
    private var deadline: Scheduled<Void>?

    init(sockets: RealtimeSockets) {
        self.sockets = sockets
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: sockets.idleTimeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        if buffered == nil {
            buffered = incoming
        } else {
            buffered!.writeBuffer(&incoming)
        }
        guard var buffer = buffered else { return }
        switch RealtimeUpgradeRequest.parse(buffer) {
        case .incomplete:
            return
        case .other:
            buffered = nil
            sockets.refuse(context, status: "400 Bad Request", "The request head is too long or not HTTP/1.1.")
        case .request(let request):
            buffered = nil
            buffer.moveReaderIndex(forwardBy: request.length)
            sockets.accept(request, context: context)
            if buffer.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(buffer)) }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // A head still arriving has nothing in flight: a shutdown closes it.
        if event is ChannelShouldQuiesceEvent {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
