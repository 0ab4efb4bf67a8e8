import FiregateBackend
import FiregateModel
import HTTPTypes
import Logging
import NIOCore

/// Answers bare document GETs (`GET /v1/…/documents/{path} HTTP/1.1`, see `SimpleGetRequest`)
/// from the database's cached encoding, straight from the connection's bytes: no HTTP/1.1
/// parser, no task, no router, no header fields to build — the per-request work of a static
/// file server (DESIGN §3's GET target). The answer is the one the full path gives: status,
/// headers, body, metrics and the `info` log line.
///
/// It sits in front of the HTTP/1.1 decoder. The first request on a connection that is not a
/// bare document GET (another route, a body to gzip, a header it does
/// not take) hands that request and everything after it to the full path for the rest of the
/// connection: request order is kept because nothing is answered here after that. A missing
/// document is answered here too, with the full path's 404 body.
final class DocumentReadFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let documents: DocumentBackend
    private let metrics: ServerMetrics
    private let logger: Logger
    /// Once set, every byte goes to the full HTTP/1.1 path.
    private var passThrough = false
    /// A head that has not fully arrived.
    private var partial: ByteBuffer?
    private var needsFlush = false
    /// The last target parsed on this connection (pollers repeat theirs).
    private var lastTarget: (raw: [UInt8], parsed: DocumentRequestPath)?
    private var date = (second: -1, text: "")

    init(documents: DocumentBackend, metrics: ServerMetrics, logger: Logger) {
        self.documents = documents
        self.metrics = metrics
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !passThrough else {
            context.fireChannelRead(data)
            return
        }
        var buffer = unwrapInboundIn(data)
        if var earlier = partial {
            partial = nil
            earlier.writeBuffer(&buffer)
            buffer = earlier
        }
        while buffer.readableBytes > 0 {
            let started = ContinuousClock.now
            switch SimpleGetRequest.parse(buffer) {
            case .incomplete:
                partial = buffer
                return
            case .simple(let request):
                if let (status, bytes) = answer(request, in: buffer) {
                    buffer.moveReaderIndex(forwardBy: request.length)
                    respond(status, bytes, started: started, context: context)
                    continue
                }
            case .notSimple:
                break
            }
            passThrough = true
            context.fireChannelRead(wrapInboundOut(buffer))
            return
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    /// The connection's input ended with a head still arriving: the full parser reports it.
    func channelInactive(context: ChannelHandlerContext) {
        handOverPartial(context: context)
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case ChannelEvent.inputClosed = event { handOverPartial(context: context) }
        context.fireUserInboundEventTriggered(event)
    }

    private func handOverPartial(context: ChannelHandlerContext) {
        guard let partial else { return }
        self.partial = nil
        passThrough = true
        context.fireChannelRead(wrapInboundOut(partial))
    }

    /// The document's cached encoding (or the 404 error body), nil when the full path must answer.
    private func answer(_ request: SimpleGetRequest, in buffer: ByteBuffer) -> (status: HTTPResponse.Status, body: [UInt8])? {
        let target: DocumentRequestPath
        let raw = buffer.getBytes(at: buffer.readerIndex + request.target.lowerBound, length: request.target.count) ?? []
        if let lastTarget, lastTarget.raw == raw {
            target = lastTarget.parsed
        } else {
            guard let parsed = try? DocumentRequestPath.parse(String(decoding: raw, as: UTF8.self)) else { return nil }
            target = parsed
            lastTarget = (raw, parsed)
        }
        guard target.verb == nil, target.path.isDocument else { return nil }
        guard let bytes = documents.database(target.database).encodedDocument(target.path) else {
            let error = DocumentRoutes.notFound(target.database, target.path)
            return (.notFound, JSONWriter.bytes(JSON.errorBody(error)))
        }
        if request.acceptsGzip, bytes.count >= FiregateResponder.gzipThreshold { return nil }
        return (.ok, bytes)
    }

    private func respond(_ status: HTTPResponse.Status, _ body: [UInt8], started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        var out = context.channel.allocator.buffer(capacity: body.count + 160)
        out.writeStaticString("HTTP/1.1 ")
        out.writeString("\(status.code) \(status.reasonPhrase)")
        out.writeStaticString("\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ")
        out.writeString(String(body.count))
        out.writeStaticString("\r\nDate: ")
        out.writeString(currentDate())
        out.writeStaticString("\r\nServer: ")
        out.writeString(FiregateServer.serverName)
        out.writeStaticString("\r\n\r\n")
        out.writeBytes(body)
        context.write(wrapOutboundOut(out), promise: nil)
        needsFlush = true
        let duration = ContinuousClock.now - started
        metrics.requestFinished(surface: .documents, method: "GET", status: status.code, duration: duration)
        if logger.logLevel <= .info, let path = lastTarget.map({ String(decoding: $0.raw, as: UTF8.self) }) {
            FiregateResponder.logRequest(logger, method: "GET", path: path, status: status.code, duration: duration, surface: .documents)
        }
    }

    /// The `Date` header, formatted once a second per connection.
    private func currentDate() -> String {
        let second = HTTPDate.currentSecond()
        if date.second != second { date = (second, HTTPDate.format(second)) }
        return date.text
    }
}
