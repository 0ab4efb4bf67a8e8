import NIOCore
import NIOHTTPTypes

/// Once the server has closed its side of a connection (after answering a `Connection: close`
/// request, or one it could not parse), reads and discards what the client still sends until
/// the client closes too, which ends the connection.
///
/// Hummingbird half-closes after such an answer and waits for the client to close, but no
/// longer reads: a client still sending a body the route never read (a 4 MiB PUT refused at
/// once) blocks on full socket buffers without reading the answer, and a client that hung up
/// is never noticed, so the connection and its buffers stayed forever. A client that neither
/// stops sending nor closes is cut off after `limit`.
final class LingeringClose: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    static let limit = TimeAmount.seconds(30)

    private var draining = false
    private var cutOff: Scheduled<Void>?

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !draining else { return }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        // Downstream no longer asks for data (nobody consumes it): keep reading to the end.
        if draining { context.read() } else { context.fireChannelReadComplete() }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Parse errors in the discarded input concern nobody.
        guard !draining else { return }
        context.fireErrorCaught(error)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        context.close(mode: mode, promise: promise)
        if mode == .output, !draining {
            draining = true
            context.read()
            cutOff = context.eventLoop.assumeIsolated().scheduleTask(in: LingeringClose.limit) { context.close(promise: nil) }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cutOff?.cancel()
    }
}
