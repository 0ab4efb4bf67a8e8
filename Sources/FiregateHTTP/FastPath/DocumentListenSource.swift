import FiregateBackend
import FiregateModel
import HTTPTypes
import NIOCore

/// A document listen's frames for an `EventLoopStream`: its first frame, then
/// `DocumentListenStream`'s frame for each commit or overflow, keep-alives from the ticker,
/// and `event: error` when the feed closes it (or the server shuts down, 503).
final class DocumentListenSource: EventLoopStreamSource {
    private var stream: DocumentListenStream
    private let subscription: FeedSubscription
    private var first: ByteBuffer?

    init(_ stream: DocumentListenStream) {
        var stream = stream
        (subscription, first) = stream.open()
        self.stream = stream
        stream.ticker.register(subscription)
    }

    var surface: Surface { .documents }
    var headers: HTTPFields { ServerSentEvents.headers }

    func shutDown() -> [ByteBuffer] {
        [ServerSentEvents.frame(event: "error", json: JSON.errorBody(FiregateError(.unavailable, "The server is shutting down.")))]
    }

    func poll(wake: @escaping @Sendable () -> Void) -> EventLoopStreamPoll {
        if let first {
            self.first = nil
            return .frames([first])
        }
        while true {
            let (event, finished) = subscription.poll(orWake: wake)
            guard let event else { return finished ? .ended(last: nil) : .waiting }
            switch event {
            case .heartbeat:
                if let denial = stream.revocation() { return .ended(last: ServerSentEvents.frame(event: "error", json: JSON.errorBody(denial))) }
                return .frames([ServerSentEvents.keepAlive])
            case .closed(let error):
                return .ended(last: ServerSentEvents.frame(event: "error", json: JSON.errorBody(error)))
            case .commit, .overflow:
                // A commit that changes nothing here is polled past.
                if let frame = stream.frame(for: event) { return .frames([frame]) }
            }
        }
    }

    func stop() {
        stream.ticker.unregister(subscription)
        subscription.cancel()
    }
}
