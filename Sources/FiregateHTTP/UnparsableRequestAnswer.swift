import FiregateModel
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Answers a request the HTTP/1.1 parser refuses (a request line or header block over 80 KB,
/// broken framing) with a 400 and a Firestore-shaped JSON error, then closes the output —
/// instead of Hummingbird's bare 400 with an empty body. A parse error while a response is
/// under way goes on to Hummingbird unchanged.
final class UnparsableRequestAnswer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// A request head came in and its response has not ended yet.
    private var responding = false
    private var answered = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { responding = true }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { responding = false }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parseError = error as? HTTPParserError, !responding else {
            context.fireErrorCaught(error)
            return
        }
        guard !answered else { return }
        answered = true
        let body = JSONWriter.bytes(JSON.errorBody(UnparsableRequestAnswer.error(for: parseError)))
        let head = HTTPResponse(status: .badRequest, headerFields: [
            .contentType: "application/json; charset=UTF-8", .contentLength: String(body.count), .connection: "close",
        ])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(context.channel.allocator.buffer(bytes: body))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.close(mode: .output, promise: nil)
    }

    /// The parser's limit for a request line and its headers (Hummingbird's default decoder
    /// configuration, which the server keeps).
    static let headLimitKB = HTTP1Channel.Configuration.DecoderConfiguration().maxHeaderListSize / 1024

    static func error(for parseError: HTTPParserError) -> FiregateError {
        switch parseError {
        case .headerOverflow:
            .invalidArgument("The request line and headers are too large: at most \(headLimitKB) KB are accepted.")
        default:
            .invalidArgument("The request is not valid HTTP/1.1 (\(parseError)).")
        }
    }
}
