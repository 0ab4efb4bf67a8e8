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

    /// A response streaming `events` as frames (`frame` renders one; nil skips it), merged with
    /// the ticker's keep-alives; at most `capacity` frames wait for a slow reader. `end` runs once
    /// it stops (it ends the subscription); at shutdown an `error` event says why first.
    static func response<Event: Sendable>(_ request: Request, events: AsyncStream<Event>, capacity: Int, ticker: KeepAliveTicker,
                                          end: @escaping @Sendable () -> Void,
                                          frame: @escaping @Sendable (Event) -> ByteBuffer?) -> Response {
        Response(status: .ok, headers: headers, body: ResponseBody { writer in
            let (frames, output) = AsyncStream<ByteBuffer>.makeStream(bufferingPolicy: .bufferingNewest(capacity))
            let forward = Task {
                for await event in events {
                    if let buffer = frame(event) { output.yield(buffer) }
                }
                output.finish()
            }
            let registration = ticker.register { output.yield(keepAlive) }
            defer {
                ticker.unregister(registration)
                forward.cancel()
                end()
            }
            await write(frames, to: &writer, request: request) {
                output.yield(ServerSentEvents.frame(event: "error", json: JSON.errorBody(FiregateError(.unavailable, "The server is shutting down."))))
                forward.cancel()
                end()
            }
        })
    }
}
