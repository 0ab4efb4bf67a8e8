import FiregateBackend
import FiregateModel
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle

/// The `text/event-stream` answer to a streaming GET: frames from the subscription as they
/// come, each flushed at once, until the client goes away, the stream is cancelled, or the
/// server shuts down (which must not wait for streams that never end on their own).
enum TreeEventStreamResponse {
    static let headers: HTTPFields = [
        .contentType: "text/event-stream; charset=utf-8",
        .cacheControl: "no-cache",
        HTTPField.Name("X-Accel-Buffering")!: "no",
        TreeResponses.allowOrigin: "*",
    ]

    static func make(_ subscription: TreeStreamSubscription, tree: TreeBackend, request: Request) -> Response {
        Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // Ends at once when the client hangs up, not at the next event for it.
            await InboundClose.cancelling(request) {
                do {
                    try await withGracefulShutdownHandler {
                        for await frame in subscription {
                            var buffer = ByteBuffer(bytes: frame.bytes)
                            // Coalesce whatever else is already queued into the same write.
                            for more in subscription.takeQueued() { buffer.writeBytes(more.bytes) }
                            try await writer.write(buffer)
                        }
                    } onGracefulShutdown: {
                        subscription.finish()
                    }
                } catch {
                    // The client went away; fall through to unsubscribe.
                }
            }
            await tree.unsubscribe(subscription)
            try? await writer.finish(nil)
        })
    }
}
