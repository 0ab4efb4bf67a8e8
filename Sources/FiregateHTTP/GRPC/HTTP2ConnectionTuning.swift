import NIOCore
import NIOHTTP2

/// What Hummingbird's HTTP/2 channel does not let us configure, fixed after its setup
/// (each reproduced with grpcio, reference/grpc-firestore.md §7):
/// - its connection manager counts every client PING as a strike and closes the connection
///   ("too_many_pings") at the third, and gRPC C-core sends BDP pings on busy streams: pings
///   are kept from reaching it (NIOHTTP2Handler has already answered them);
/// - it allows 100 concurrent streams, and grpcio silently queues calls past that (one Listen
///   stream per `on_snapshot`): a second SETTINGS frame raises the limit.
final class HTTP2ConnectionTuning: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// Streams one connection may have open at once.
    static let maxConcurrentStreams = 4096

    /// Adds the tuning right behind the connection's `NIOHTTP2Handler`.
    static func install(on channel: any Channel) throws {
        let operations = channel.pipeline.syncOperations
        let http2 = try operations.handler(type: NIOHTTP2Handler.self)
        try operations.addHandler(HTTP2ConnectionTuning(), position: .after(http2))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let settings = HTTP2Frame(streamID: .rootStream, payload: .settings(.settings([
            HTTP2Setting(parameter: .maxConcurrentStreams, value: HTTP2ConnectionTuning.maxConcurrentStreams),
        ])))
        context.writeAndFlush(wrapOutboundOut(settings), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .ping(_, ack: false) = unwrapInboundIn(data).payload { return }
        context.fireChannelRead(data)
    }
}

/// Keeps a graceful shutdown's quiesce event from an HTTP/2 stream's own connection-state
/// handler: that handler would close the stream as soon as its response ends, which resets a
/// gRPC stream (RST_STREAM CANCEL) right behind — sometimes ahead of — its UNAVAILABLE trailers
/// while the client's side is still open. Every stream ends by itself on shutdown (Listen and
/// Write send UNAVAILABLE, SSE streams their error event) and the connection's GOAWAY does the rest.
final class StreamQuiesceFilter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { return }
        context.fireUserInboundEventTriggered(event)
    }
}
