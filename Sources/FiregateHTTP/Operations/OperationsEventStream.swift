import FiregateBackend
import FiregateModel
import HTTPTypes
import Hummingbird
import NIOCore

/// `GET /emulator/v1/events`: the operations log as Server-Sent Events (`event: operation`,
/// `id: <seq>`), for the dashboard and for tests that wait on what the server did.
/// `?backlog=n` first replays up to the last n kept events; `Last-Event-ID` resumes after one.
enum OperationsEventStream {
    static func open(_ request: Request, log: OperationsLog, ticker: KeepAliveTicker) throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        let backlog = try params.int("backlog") ?? 0
        guard backlog >= 0 else { throw .invalidArgument("backlog must not be negative.") }
        var afterSeq: Int64?
        if let lastID = request.headers[HTTPField.Name("Last-Event-ID")!], !lastID.isEmpty {
            guard let seq = Int64(lastID), seq >= 0 else {
                throw .invalidArgument("Last-Event-ID must be the id of an earlier operation event (a number).")
            }
            afterSeq = seq
        }
        let subscription = log.subscribe(afterSeq: afterSeq, backlog: backlog)
        return ServerSentEvents.response(request, events: subscription.events, capacity: OperationsLog.capacity, ticker: ticker,
                                         end: subscription.finish) { event in
            ServerSentEvents.frame(event: "operation", id: String(event.seq), json: event.json)
        }
    }
}
