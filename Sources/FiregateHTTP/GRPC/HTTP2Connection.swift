import HummingbirdCore
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2

/// An HTTP/2 connection (h2c with prior knowledge, or h2 after TLS's ALPN): gRPC calls and any
/// other request, each stream one request.
///
/// The pipeline is ours rather than Hummingbird's `HTTP2Channel`, whose streams each become a
/// channel, a task and a `Request` before anything is read, with nowhere to stand in between:
/// here `GRPCFastPath` sits between the HTTP/2 handler and the stream multiplexer and
/// answers the hot unary calls from their frames; every other stream gets Hummingbird's stream
/// handlers and request loop (`streams.handle`), run in the server's task tree (`OpenConnections`).
/// `HTTP2GracefulClose` does what Hummingbird's connection manager did at shutdown.
struct HTTP2Connection: Sendable {
    /// Hummingbird's request loop, for streams the fast path hands over (one request each).
    let streams: HTTP1Channel
    let grpc: FirestoreGRPCService

    /// Streams one connection may have open at once: grpcio silently queues calls past the
    /// limit, and each `on_snapshot` is a Listen stream.
    static let maxConcurrentStreams = 4096

    /// How many stream resets and stream errors a connection may cause in `abuseWindow`, and
    /// in its life (swift-nio-http2's "glitches"), before it is closed with ENHANCE_YOUR_CALM.
    /// swift-nio-http2's defaults (200 each) are a public server's guard against rapid-reset
    /// floods; an SDK's one connection carries every Firestore instance of a test process, and
    /// cancelling listeners is what a test suite does all day: Google's Firestore integration
    /// suite in Node tripped them (GOAWAY 11, then RESOURCE_EXHAUSTED and hung calls).
    static let resetsPerWindow = 100_000
    static let abuseWindow: TimeAmount = .seconds(30)
    static let glitchesPerConnection = Int.max / 2

    /// Sets `channel` up for HTTP/2; on the event loop, before its first bytes are replayed.
    func setup(channel: any Channel, connections: OpenConnections, logger: Logger) throws {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: HTTP2Connection.maxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
        ]
        configuration.maximumConnectionGlitches = HTTP2Connection.glitchesPerConnection
        var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
        streamConfiguration.streamResetFrameRateLimit.maximumCount = HTTP2Connection.resetsPerWindow
        streamConfiguration.streamResetFrameRateLimit.windowLength = HTTP2Connection.abuseWindow
        streamConfiguration.streamErrorRateLimit.maximumCount = HTTP2Connection.resetsPerWindow
        streamConfiguration.streamErrorRateLimit.windowLength = HTTP2Connection.abuseWindow
        let streams = self.streams
        let operations = channel.pipeline.syncOperations
        try operations.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: configuration, streamConfiguration: streamConfiguration))
        try operations.addHandler(HTTP2GracefulClose())
        try operations.addHandler(GRPCFastPath(service: grpc, logger: logger))
        try operations.addHandler(HTTP2StreamMultiplexer(mode: .server, channel: channel, inboundStreamInitializer: { stream in
            do {
                let operations = stream.pipeline.syncOperations
                try operations.addHandler(HTTP2FramePayloadToHTTPServerCodec())
                try operations.addHandler(StreamQuiesceFilter())
                try operations.addHandler(HTTPConnectionStateHandler(logger: logger))
                let value = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(wrappingChannelSynchronously: stream)
                connections.run { await streams.handle(value: value, logger: logger) }
                return stream.eventLoop.makeSucceededVoidFuture()
            } catch {
                return stream.eventLoop.makeFailedFuture(error)
            }
        }))
    }
}

/// Ends a connection gracefully when the server asks it to quiesce (shutdown): a GOAWAY naming
/// the last stream it accepted, then the close once its open streams have ended (Listen and
/// Write end by themselves with UNAVAILABLE, unary calls when answered). Ends it at once when
/// the client has closed its side of the socket (see `inputClosed`).
final class HTTP2GracefulClose: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var open = 0
    private var lastStream = HTTP2StreamID.rootStream
    private var quiescing = false

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let created as NIOHTTP2StreamCreatedEvent:
            open += 1
            lastStream = max(lastStream, created.streamID)
        case is StreamClosedEvent:
            open -= 1
            if quiescing, open == 0 { context.close(promise: nil) }
        case let channelEvent as ChannelEvent where channelEvent == .inputClosed:
            // The client closed its side of the socket (grpcio's `channel.close()`, a process
            // that exited). Hummingbird's bootstrap allows remote half-closure, so that is this
            // event rather than a close, and nothing else in this pipeline acts on it (it was
            // Hummingbird's `HTTP2ServerConnectionManager` that closed). An HTTP/2 connection
            // without input is over: no request, WINDOW_UPDATE or PING ack can come. Closing
            // ends its streams (`GRPCFastPath.channelInactive`, the multiplexer's stream
            // channels) and, through `closeFuture`, its registry entries (`GRPCConnections`).
            context.close(promise: nil)
            return
        case is ChannelShouldQuiesceEvent:
            // Passed on to `GRPCFastPath` (its Listen calls end); stream channels' calls end by
            // themselves (see `StreamQuiesceFilter`).
            guard !quiescing else { return }
            quiescing = true
            let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: lastStream, errorCode: .noError, opaqueData: nil))
            context.writeAndFlush(wrapOutboundOut(goAway), promise: nil)
            if open == 0 { context.close(promise: nil) }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
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
