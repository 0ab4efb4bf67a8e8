import FiregateModel
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// One HTTP/1.1 exchange with another replica: connect, send the request, read the whole
/// answer, close. Forwarded requests are the few that reach a replica not owning their scope
/// (nginx routes the rest to the owner's side of the ring), so a connection per exchange keeps
/// this free of pooling state.
struct ForwardingClient: Sendable {
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: ByteBuffer
    }

    var group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    /// A forwarded commit waits for the owner's durable answer; this bounds a hung owner.
    var timeout: TimeAmount = .seconds(30)

    /// Sends `head` and `body` to `address` (`http://host:port`). Throws UNAVAILABLE when the
    /// replica cannot be reached or does not answer in time: the client may retry.
    func send(to address: String, head: HTTPRequestHead, body: ByteBuffer) async throws(FiregateError) -> Answer {
        do {
            let loop = group.next()
            let promise = loop.makePromise(of: Answer.self)
            let timeout = timeout
            let channel = try await exchange(address, head: head, body: body, on: loop) { AnswerCollector(promise: promise, timeout: timeout) }
            defer { channel.close(promise: nil) }
            return try await promise.futureResult.get()
        } catch {
            throw .unavailable("Replica \(address) could not be reached (\(error)). Retry.")
        }
    }

    /// Connects to `address` with `reader` reading the answer, and sends the request, the
    /// connection closing after the answer.
    private func exchange<Reader: ChannelInboundHandler & RemovableChannelHandler>(
        _ address: String, head: HTTPRequestHead, body: ByteBuffer, on loop: any EventLoop, reader: @escaping @Sendable () -> Reader
    ) async throws -> any Channel {
        guard let url = URL(string: address), url.scheme == "http", let host = url.host, !host.isEmpty else {
            throw FiregateError(.unavailable, "The replica address \"\(address)\" is not an http://host:port URL; set --advertise on that replica.")
        }
        let channel = try await ClientBootstrap(group: loop)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(reader())
                }
            }
            .connect(host: host, port: url.port ?? 80).get()
        var head = head
        head.headers.replaceOrAdd(name: "Host", value: url.port.map { "\(host):\($0)" } ?? host)
        head.headers.replaceOrAdd(name: "Content-Length", value: String(body.readableBytes))
        head.headers.replaceOrAdd(name: "Connection", value: "close")
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        if body.readableBytes > 0 { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        return channel
    }
}

/// Gathers one response and completes the promise once: with the answer at its end, or with
/// an error when the connection closes first, fails, or the timeout passes.
private final class AnswerCollector: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    struct ClosedEarly: Error, CustomStringConvertible {
        var description: String { "the connection closed before the whole answer came" }
    }
    struct TimedOut: Error, CustomStringConvertible {
        var description: String { "no answer in time" }
    }

    private let promise: EventLoopPromise<ForwardingClient.Answer>
    private let timeout: TimeAmount
    private var head: HTTPResponseHead?
    private var body: ByteBuffer?
    private var done = false
    private var timer: Scheduled<Void>?

    init(promise: EventLoopPromise<ForwardingClient.Answer>, timeout: TimeAmount) {
        self.promise = promise
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = bound.value
            handler.finish(.failure(TimedOut()))
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let received):
            head = received
        case .body(var part):
            if body == nil { body = part } else { body!.writeBuffer(&part) }
        case .end:
            guard let head else { return finish(.failure(ClosedEarly())) }
            finish(.success(.init(status: Int(head.status.code), headers: head.headers, body: body ?? ByteBuffer())))
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(ClosedEarly()))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.close(promise: nil)
    }

    private func finish(_ result: Result<ForwardingClient.Answer, any Error>) {
        guard !done else { return }
        done = true
        timer?.cancel()
        promise.completeWith(result)
    }
}

extension ForwardingClient {
    /// An answer whose body streams (an event stream): its head, then its body as it comes.
    struct StreamingAnswer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: AsyncThrowingStream<ByteBuffer, any Error>
        /// Closes the connection (the client went away).
        var close: @Sendable () -> Void
    }

    /// Sends `head` and `body` and returns once the answer's head has come (within `timeout`);
    /// its body then streams for as long as the other replica sends it.
    func stream(to address: String, head: HTTPRequestHead, body: ByteBuffer) async throws(FiregateError) -> StreamingAnswer {
        do {
            let loop = group.next()
            let headPromise = loop.makePromise(of: HTTPResponseHead.self)
            let (parts, continuation) = AsyncThrowingStream.makeStream(of: ByteBuffer.self, bufferingPolicy: .bufferingNewest(4096))
            let timeout = timeout
            let channel = try await exchange(address, head: head, body: body, on: loop) {
                StreamRelay(head: headPromise, parts: continuation, timeout: timeout)
            }
            let received: HTTPResponseHead
            do {
                received = try await headPromise.futureResult.get()
            } catch {
                channel.close(promise: nil)
                throw error
            }
            return StreamingAnswer(status: Int(received.status.code), headers: received.headers, body: parts,
                                   close: { channel.close(promise: nil) })
        } catch {
            throw .unavailable("Replica \(address) could not be reached (\(error)). Retry.")
        }
    }
}

/// Hands a streamed answer on: its head to a promise (failed if none comes within the timeout),
/// its body parts to a stream that ends with the answer or the connection.
private final class StreamRelay: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let head: EventLoopPromise<HTTPResponseHead>
    private let parts: AsyncThrowingStream<ByteBuffer, any Error>.Continuation
    private let timeout: TimeAmount
    private var headDone = false
    private var timer: Scheduled<Void>?

    init(head: EventLoopPromise<HTTPResponseHead>, parts: AsyncThrowingStream<ByteBuffer, any Error>.Continuation, timeout: TimeAmount) {
        self.head = head
        self.parts = parts
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: timeout) {
            let (relay, context) = bound.value
            relay.fail(AnswerCollectorTimeout())
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let received):
            headDone = true
            timer?.cancel()
            head.succeed(received)
        case .body(let part):
            parts.yield(part)
        case .end:
            parts.finish()
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(AnswerCollectorTimeout.closed)
        parts.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        parts.finish(throwing: error)
        context.close(promise: nil)
    }

    private func fail(_ error: any Error) {
        guard !headDone else { return }
        headDone = true
        timer?.cancel()
        head.fail(error)
    }
}

/// Why a forwarded request got no answer.
struct AnswerCollectorTimeout: Error, CustomStringConvertible {
    static let closed = AnswerCollectorTimeout(description: "the connection closed before the answer came")
    var description = "no answer in time"
}
