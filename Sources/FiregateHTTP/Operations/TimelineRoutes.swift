import FiregateBackend
import FiregateModel
import HTTPTypes
import Hummingbird
import OrderedCollections

/// The timeline routes (docs/timeline.md): `GET /clients/{id}/timeline`,
/// `GET /emulator/v1/connections/{id}/timeline` and `GET /emulator/v1/timeline` (every lane:
/// the trace file a test saves when it fails). JSON, or Server-Sent Events (`event: timeline`)
/// when asked with `Accept: text/event-stream` or `?live=true`.
struct TimelineRoutes: Sendable {
    let timelines: Timelines
    let ticker: KeepAliveTicker

    /// The lanes asked for: `lanes` (nil: every lane, narrowed by `?lanes=`).
    func respond(_ request: Request, lanes: Set<String>?) throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        var filter = try TimelineRoutes.filter(params)
        if let lanes { filter.lanes = lanes }
        let accept = request.headers[.accept] ?? ""
        if try params.bool("live") == true || accept.contains("text/event-stream") {
            if let lastID = request.headers[HTTPField.Name("Last-Event-ID")!], !lastID.isEmpty {
                guard let seq = Int64(lastID), seq >= 0 else { throw .invalidArgument("Last-Event-ID must be the seq of an earlier timeline event (a number).") }
                filter.afterSeq = max(filter.afterSeq, seq)
            }
            return stream(request, filter: filter)
        }
        return JSONResponse.make(document(filter))
    }

    /// The trace file: `{"firegate":"timeline","version":1,"exportedAt","capacity","lanes","events"}`.
    func document(_ filter: TimelineFilter) -> JSON {
        let events = timelines.events(filter)
        let shown = filter.lanes ?? Set(events.map(\.lane))
        return .object(OrderedDictionary(uniqueKeysWithValues: [
            ("firegate", .string("timeline")), ("version", .int(1)),
            ("exportedAt", .string(timelines.clock.now().rfc3339)), ("capacity", .int(Int64(timelines.capacity))),
            ("lanes", .array(timelines.lanes(filter.lanes == nil ? nil : shown).map(\.json))),
            ("events", .array(events.map(\.json))),
        ]))
    }

    static func filter(_ params: QueryParameters) throws(FiregateError) -> TimelineFilter {
        var filter = TimelineFilter()
        filter.sinceMicros = try time(params.first("since"), name: "since")
        filter.untilMicros = try time(params.first("until"), name: "until")
        if let after = params.first("afterSeq") {
            guard let seq = Int64(after), seq >= 0 else { throw .invalidArgument("afterSeq must be a non-negative number (an event's seq).") }
            filter.afterSeq = seq
        }
        if let limit = try params.int("limit") {
            guard limit >= 0 else { throw .invalidArgument("limit must not be negative.") }
            filter.limit = limit
        }
        let lanes = params.all("lanes").flatMap { $0.split(separator: ",").map(String.init) }
        if !lanes.isEmpty { filter.lanes = Set(lanes) }
        let kindNames = params.all("kinds").flatMap { $0.split(separator: ",").map(String.init) }
        if !kindNames.isEmpty {
            var kinds = Set<TimelineEvent.Kind>()
            for name in kindNames {
                guard let kind = TimelineEvent.Kind(rawValue: name) else {
                    throw .invalidArgument("Unknown timeline kind \"\(name)\": one of \(TimelineEvent.Kind.allCases.map(\.rawValue).joined(separator: ", ")).")
                }
                kinds.insert(kind)
            }
            filter.kinds = kinds
        }
        return filter
    }

    /// An RFC 3339 time or epoch milliseconds, in microseconds.
    static func time(_ text: String?, name: String) throws(FiregateError) -> Int64? {
        guard let text else { return nil }
        if let ms = Double(text), ms.isFinite, abs(ms) < 1e14 { return Int64(ms * 1000) }
        guard let time = Timestamp(rfc3339: text) else {
            throw .invalidArgument("\(name) must be an RFC 3339 time (2030-01-01T00:00:00Z) or epoch milliseconds.")
        }
        return time.microseconds
    }

    /// The kept events that match, then each new one, as `event: timeline` with `id: <seq>`.
    private func stream(_ request: Request, filter: TimelineFilter) -> Response {
        let subscription = timelines.subscribe(filter)
        return ServerSentEvents.response(request, events: subscription.events, capacity: timelines.capacity, ticker: ticker,
                                         end: subscription.finish) { event in
            ServerSentEvents.frame(event: "timeline", id: String(event.seq), json: event.json)
        }
    }
}
