import FiregateModel
import Hummingbird
import HTTPTypes
import NIOCore
import ServiceLifecycle

/// Server-Sent Events framing shared by every streaming surface.
enum ServerSentEvents {
    /// Headers that make browsers' EventSource and `curl -N` see events as they are sent:
    /// no caching, no proxy buffering.
    static var headers: HTTPFields {
        var headers: HTTPFields = [:]
        headers[.contentType] = "text/event-stream; charset=utf-8"
        headers[.cacheControl] = "no-cache"
        headers[HTTPField.Name("X-Accel-Buffering")!] = "no"
        return headers
    }

    /// `event: <name>\nid: <id>\ndata: <json>\n\n`.
    static func frame(event: String, id: String? = nil, data: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(data.count + event.utf8.count + 32)
        buffer.writeString("event: \(event)\n")
        if let id { buffer.writeString("id: \(id)\n") }
        buffer.writeString("data: ")
        buffer.writeBytes(data)
        buffer.writeString("\n\n")
        return buffer
    }

    static func frame(event: String, id: String? = nil, json: JSON) -> ByteBuffer {
        frame(event: event, id: id, data: JSONWriter.bytes(json))
    }

    /// A comment line, ignored by clients, that keeps proxies and clients from timing out.
    static let keepAlive = ByteBuffer(string: ": keep-alive\n\n")

    /// Writes `frames` (events and keep-alives merged into one sequence) until they end, the
    /// client goes away or the server shuts down (`onShutdown` then says so and ends them).
    static func write(_ frames: AsyncStream<ByteBuffer>, to writer: inout any ResponseBodyWriter, request: Request,
                      onShutdown: @escaping @Sendable () -> Void) async {
        await InboundClose.cancelling(request) {
            do {
                try await withGracefulShutdownHandler {
                    try await writer.write(ServerSentEvents.keepAlive)
                    for await frame in frames { try await writer.write(frame) }
                } onGracefulShutdown: {
                    onShutdown()
                }
                try await writer.finish(nil)
            } catch {
                // The client went away.
            }
        }
    }
}
