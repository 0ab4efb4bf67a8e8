import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOHTTP2

/// One port for HTTP/1.1, gRPC and the Realtime Database's sockets (docs/architecture.md): a connection
/// that opens with the HTTP/2 client preface is served as HTTP/2 (h2c with prior knowledge, or
/// `h2` after TLS's ALPN, since TLS wraps this channel); one that opens with `GET /.ws` becomes a
/// socket on a pipeline of its own (no HTTP/1.1 handlers and no task kept: idle sockets are
/// many); anything else goes to the HTTP/1.1 channel with its fast path, unchanged.
///
/// Hummingbird has no builder for HTTP/1.1 and h2c on one plaintext port, and grpc-swift's
/// transport owns its listening socket (docs/wire/grpc.md, Transport), so the choice is made
/// here: nothing can be read in `setup`, so a handler looks at the first bytes, installs the
/// chosen pipeline, replays what it buffered and removes itself.
struct ProtocolSniffingChannel: ServerChildChannel {
    /// The connection; what serves it is decided by its first bytes.
    struct Value: ServerChildChannelValue {
        let channel: any Channel
    }

    let http1: FastPathHTTP1Channel
    let http2: HTTP2Connection
    let sockets: RealtimeSockets
    let connections: OpenConnections

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        connections.opened(channel)
        do {
            // The first read is the one that decides: it must already use the small buffers
            // every idle connection keeps (see `FastPathHTTP1Channel.receiveBuffers`).
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: FastPathHTTP1Channel.receiveBuffers)
            try channel.pipeline.syncOperations.addHandler(PrefaceSniffer(http1: http1, http2: http2, sockets: sockets, connections: connections, logger: logger))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.eventLoop.makeSucceededFuture(Value(channel: channel))
    }

    /// Nothing to wait for per connection: a connection's task would keep its frames for the
    /// connection's whole life, and idle connections are many (docs/benchmarks.md, idle streams).
    /// Tasks start only where a protocol needs one (an HTTP/2 stream the gRPC fast path hands
    /// over, Hummingbird's HTTP/1.1 loop once the fast path hands over); shutdown reaches every
    /// connection through its pipeline, and `OpenConnections` keeps the server until they closed.
    func handle(value: Value, logger: Logger) async {
        await connections.runUntilDrained()
    }
}

/// Buffers a connection's first bytes until they tell its protocol (the HTTP/2 preface, a
/// Realtime Database socket's `GET /.ws`, or anything else), then sets the connection up for it.
final class PrefaceSniffer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`.
    static let preface: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    enum Choice { case http1, http2, realtime }

    let http1: FastPathHTTP1Channel
    let http2: HTTP2Connection
    let sockets: RealtimeSockets
    let logger: Logger
    private var buffered: ByteBuffer?
    private var decided = false

    let connections: OpenConnections

    init(http1: FastPathHTTP1Channel, http2: HTTP2Connection, sockets: RealtimeSockets, connections: OpenConnections, logger: Logger) {
        self.http1 = http1
        self.http2 = http2
        self.sockets = sockets
        self.connections = connections
        self.logger = logger
    }

    /// Whether `bytes` is the preface (true), cannot become it (false) or is a prefix of it (nil).
    static func matches(_ bytes: ByteBufferView) -> Bool? {
        for (offset, byte) in bytes.prefix(preface.count).enumerated() where byte != preface[offset] {
            return false
        }
        return bytes.count >= preface.count ? true : nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var incoming = unwrapInboundIn(data)
        guard !decided else {
            context.fireChannelRead(data)
            return
        }
        if buffered == nil {
            buffered = incoming
        } else {
            buffered!.writeBuffer(&incoming)
        }
        let bytes = buffered!.readableBytesView
        guard let isHTTP2 = PrefaceSniffer.matches(bytes), let isSocket = RealtimeUpgradeRequest.opens(bytes) else { return }
        choose(context: context, isHTTP2 ? .http2 : isSocket ? .realtime : .http1)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if decided { context.fireChannelReadComplete() }
    }

    /// A graceful shutdown asks every connection to quiesce: one that has sent nothing yet has
    /// nothing in flight, so it is closed (which decides it) rather than waited for. So is one
    /// whose client closed its side before its bytes decided anything (remote half-closure is
    /// allowed: without this the socket stays in CLOSE-WAIT).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !decided, event is ChannelShouldQuiesceEvent {
            context.close(promise: nil)
            return
        }
        if !decided, case ChannelEvent.inputClosed = event {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        // Closed before a decision: HTTP/1.1 handles the end (and any partial request) as usual.
        if !decided { choose(context: context, .http1) }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !decided {
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
    }

    private func choose(context: ChannelHandlerContext, _ kind: Choice) {
        decided = true
        let channel = context.channel
        do {
            switch kind {
            case .http2:
                try http2.setup(channel: channel, connections: connections, logger: logger)
            case .http1:
                try http1.setup(channel: channel)
            case .realtime:
                try channel.pipeline.syncOperations.addHandler(RealtimeUpgradeHandler(sockets: sockets))
            }
        } catch {
            failed(error, context: context)
            return
        }
        replay(context: context)
    }

    /// Hands what was buffered to the chosen pipeline and leaves it.
    private func replay(context: ChannelHandlerContext) {
        if let bytes = buffered {
            buffered = nil
            context.fireChannelRead(wrapInboundOut(bytes))
            context.fireChannelReadComplete()
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func failed(_ error: any Error, context: ChannelHandlerContext) {
        logger.error("The connection could not be set up: \(error)")
        context.close(promise: nil)
    }
}
