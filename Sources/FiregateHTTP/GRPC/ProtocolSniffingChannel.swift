import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOHTTP2

/// One port for HTTP/1.1, gRPC and the Realtime Database's sockets (DESIGN §1): a connection
/// that opens with the HTTP/2 client preface is served as HTTP/2 (h2c with prior knowledge, or
/// `h2` after TLS's ALPN, since TLS wraps this channel); one that opens with `GET /.ws` becomes a
/// socket on a pipeline of its own (no HTTP/1.1 handlers and no task kept: idle sockets are
/// many); anything else goes to the HTTP/1.1 channel with its fast path, unchanged.
///
/// Hummingbird has no builder for HTTP/1.1 and h2c on one plaintext port, and grpc-swift's
/// transport owns its listening socket (reference/grpc-firestore.md §4), so the choice is made
/// here: nothing can be read in `setup`, so a handler looks at the first bytes, installs the
/// chosen pipeline, replays what it buffered and removes itself; `handle` waits for its choice.
struct ProtocolSniffingChannel: ServerChildChannel {
    enum Value: ServerChildChannelValue {
        case pending(EventLoopFuture<Chosen>, any Channel)
        var channel: any Channel {
            switch self { case .pending(_, let channel): channel }
        }
    }

    enum Chosen: Sendable {
        case http1(FastPathHTTP1Channel.Value)
        case http2(HTTP2Channel.Value)
        /// A Realtime Database socket: it runs on its pipeline alone.
        case realtime
    }

    let http1: FastPathHTTP1Channel
    let http2: HTTP2Channel
    let sockets: RealtimeSockets

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let chosen = channel.eventLoop.makePromise(of: Chosen.self)
        do {
            // The first read is the one that decides: it must already use the small buffers
            // every idle connection keeps (see `FastPathHTTP1Channel.receiveBuffers`).
            try channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: FastPathHTTP1Channel.receiveBuffers)
            try channel.pipeline.syncOperations.addHandler(PrefaceSniffer(http1: http1, http2: http2, sockets: sockets, logger: logger,
                                                                          chosen: chosen))
        } catch {
            chosen.fail(error)
            return channel.eventLoop.makeFailedFuture(error)
        }
        return channel.eventLoop.makeSucceededFuture(.pending(chosen.futureResult, channel))
    }

    func handle(value: Value, logger: Logger) async {
        // Nothing wraps this wait: a connection's task keeps its deepest frames for its whole
        // life, and idle connections are many (DESIGN §3's idle-stream memory). Shutdown reaches
        // an undecided connection through its pipeline instead (`PrefaceSniffer`).
        guard case .pending(let future, _) = value, let chosen = try? await future.get() else { return }
        switch chosen {
        case .http1(let value): await http1.handle(value: value, logger: logger)
        case .http2(let value): await http2.handle(value: value, logger: logger)
        case .realtime: return
        }
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
    let http2: HTTP2Channel
    let sockets: RealtimeSockets
    let logger: Logger
    let chosen: EventLoopPromise<ProtocolSniffingChannel.Chosen>
    private var buffered: ByteBuffer?
    private var decided = false

    init(http1: FastPathHTTP1Channel, http2: HTTP2Channel, sockets: RealtimeSockets, logger: Logger,
         chosen: EventLoopPromise<ProtocolSniffingChannel.Chosen>) {
        self.http1 = http1
        self.http2 = http2
        self.sockets = sockets
        self.logger = logger
        self.chosen = chosen
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
    /// nothing in flight, so it is closed (which decides it) rather than waited for.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !decided, event is ChannelShouldQuiesceEvent {
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
        if !decided { chosen.fail(error) }
        context.fireErrorCaught(error)
    }

    private func choose(context: ChannelHandlerContext, _ kind: Choice) {
        decided = true
        let channel = context.channel
        let setup: EventLoopFuture<ProtocolSniffingChannel.Chosen>
        switch kind {
        case .http2:
            setup = http2.setup(channel: channel, logger: logger).flatMapThrowing { value in
                try HTTP2ConnectionTuning.install(on: channel)
                return .http2(value)
            }
        case .http1:
            setup = http1.setup(channel: channel, logger: logger).map { .http1($0) }
        case .realtime:
            do {
                try channel.pipeline.syncOperations.addHandler(RealtimeUpgradeHandler(sockets: sockets))
                setup = channel.eventLoop.makeSucceededFuture(.realtime)
            } catch {
                setup = channel.eventLoop.makeFailedFuture(error)
            }
        }
        setup.whenComplete { result in
            switch result {
            case .success(let value):
                self.chosen.succeed(value)
                if let bytes = self.buffered {
                    self.buffered = nil
                    context.fireChannelRead(self.wrapInboundOut(bytes))
                    context.fireChannelReadComplete()
                }
                context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            case .failure(let error):
                self.chosen.fail(error)
                context.close(promise: nil)
            }
        }
    }
}
