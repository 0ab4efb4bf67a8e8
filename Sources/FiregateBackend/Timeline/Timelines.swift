import DequeModule
import FiregateModel
import OrderedCollections
import Synchronization

/// The timeline of every edge client and real SDK connection (docs/timeline.md): the one
/// owner of its events. Surfaces and clients record steps through a `TimelineRecorder`; the
/// routes read them filtered, and live subscribers hear each new one.
///
/// Memory is bounded twice: the newest `capacity` events over all lanes stay, and at most
/// `closedLaneLimit` closed lanes — a server that sees connections come and go by the thousand
/// keeps the recent ones' stories, not all of them. Recording costs one append under a lock;
/// JSON is rendered only when someone reads.
public final class Timelines: Sendable {
    /// Events kept over all lanes, and closed lanes kept, by default.
    public static let defaultCapacity = 100_000
    public static let defaultClosedLaneLimit = 256
    public let capacity: Int
    public let closedLaneLimit: Int

    private struct Subscriber {
        let filter: TimelineFilter
        let continuation: AsyncStream<TimelineEvent>.Continuation
    }

    private struct State {
        var nextSeq: Int64 = 1
        /// Every kept event, oldest first.
        var events = Deque<TimelineEvent>()
        var lanes: OrderedDictionary<String, TimelineLane> = [:]
        /// Each known lane's newest event (a plain dictionary: the one lookup a step costs).
        var lastSeq: [String: Int64] = [:]
        /// Closed lanes, oldest first.
        var closed = Deque<String>()
        var subscribers: [Int: Subscriber] = [:]
        var nextSubscriber = 0
    }

    private let state = Mutex(State())
    public let clock: ServerClock

    public init(clock: ServerClock, capacity: Int = Timelines.defaultCapacity, closedLaneLimit: Int = Timelines.defaultClosedLaneLimit) {
        self.clock = clock
        self.capacity = capacity
        self.closedLaneLimit = closedLaneLimit
    }

    /// Opens a lane (again, for a client restored or recreated under the same id) and records
    /// its `lifecycle` step; returns the recorder its owner keeps.
    @discardableResult
    public func open(kind: String, name: String, protocol: String, project: String?, appId: String? = nil, action: String) -> TimelineRecorder {
        let info = TimelineLane(kind: kind, name: name, protocol: `protocol`, project: project, appId: appId, opened: clock.now())
        state.withLock { state in
            if state.lanes[info.id]?.closed != nil { state.closed.removeAll { $0 == info.id } }
            state.lanes[info.id] = info
            if state.lastSeq[info.id] == nil { state.lastSeq[info.id] = 0 }
        }
        let recorder = TimelineRecorder(lane: info.id, timelines: self)
        recorder.lifecycle(action)
        return recorder
    }

    /// The recorder of a lane; its steps are kept while the lane is.
    public func recorder(_ lane: String) -> TimelineRecorder { TimelineRecorder(lane: lane, timelines: self) }

    /// A client configured for another project after its lane opened.
    public func setProject(_ project: String?, of lane: String) {
        state.withLock { $0.lanes[lane]?.project = project }
    }

    /// Records the lane's last `lifecycle` step and marks it closed. Past `closedLaneLimit`
    /// closed lanes, the oldest half are forgotten with their events (in one pass over the
    /// events, so each close costs little however many come and go).
    public func close(_ lane: String, action: String, fields: [(String, JSON)] = []) {
        record(lane, .lifecycle, [("action", .string(action))] + fields)
        let time = clock.now()
        state.withLock { state in
            guard state.lanes[lane] != nil, state.lanes[lane]!.closed == nil else { return }
            state.lanes[lane]!.closed = time
            state.closed.append(lane)
            guard state.closed.count > closedLaneLimit else { return }
            var forgotten = Set<String>()
            while state.closed.count > closedLaneLimit / 2, let oldest = state.closed.popFirst() { forgotten.insert(oldest) }
            for id in forgotten {
                state.lanes.removeValue(forKey: id)
                state.lastSeq.removeValue(forKey: id)
            }
            state.events.removeAll { forgotten.contains($0.lane) }
        }
    }

    func record(_ lane: String, _ kind: TimelineEvent.Kind, _ fields: [(String, JSON)], changed: [TimelineChange] = [], commitTime: Timestamp? = nil) {
        let time = clock.now()
        state.withLock { state in
            // A lane forgotten (closed long ago, or cleared) takes no more steps: a listener's
            // end heard after its client was deleted must not bring the lane back.
            guard let known = state.lastSeq.index(forKey: lane) else { return }
            let event = TimelineEvent(seq: state.nextSeq, lane: lane, time: time, kind: kind, fields: fields, changed: changed, commitTime: commitTime)
            state.lastSeq.values[known] = event.seq
            state.nextSeq += 1
            state.events.append(event)
            if state.events.count > capacity { Timelines.dropOldest(&state) }
            for subscriber in state.subscribers.values where subscriber.filter.matches(event) {
                subscriber.continuation.yield(event)
            }
        }
    }

    /// The oldest event goes; a closed lane goes with its last event.
    private static func dropOldest(_ state: inout State) {
        guard let dropped = state.events.popFirst(), state.lastSeq[dropped.lane] == dropped.seq,
              state.lanes[dropped.lane]?.closed != nil else { return }
        state.lanes.removeValue(forKey: dropped.lane)
        state.lastSeq.removeValue(forKey: dropped.lane)
        state.closed.removeAll { $0 == dropped.lane }
    }

    private static func matching(_ filter: TimelineFilter, in state: State) -> [TimelineEvent] {
        var matching: [TimelineEvent] = []
        for event in state.events.reversed() where filter.matches(event) {
            matching.append(event)
            if matching.count >= filter.limit { break }
        }
        return matching.reversed()
    }

    /// The kept events that pass `filter`, oldest first (the newest `filter.limit` of them).
    public func events(_ filter: TimelineFilter) -> [TimelineEvent] {
        state.withLock { Timelines.matching(filter, in: $0) }
    }

    /// The lanes known, in the order they opened; `ids` narrows them.
    public func lanes(_ ids: Set<String>? = nil) -> [TimelineLane] {
        state.withLock { state in state.lanes.values.filter { ids?.contains($0.id) ?? true } }
    }

    public func lane(_ id: String) -> TimelineLane? { state.withLock { $0.lanes[id] } }

    /// The kept events that pass `filter`, then every new one. A subscriber that falls
    /// `capacity` events behind loses the oldest rather than growing memory.
    public func subscribe(_ filter: TimelineFilter) -> TimelineSubscription {
        let (stream, continuation) = AsyncStream<TimelineEvent>.makeStream(bufferingPolicy: .bufferingNewest(capacity))
        let id = state.withLock { state -> Int in
            for event in Timelines.matching(filter, in: state) { continuation.yield(event) }
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = Subscriber(filter: filter, continuation: continuation)
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return TimelineSubscription(events: stream, finish: { continuation.finish() })
    }

    /// Forgets every event and every closed lane (the emulator's reset); open lanes stay.
    public func clear() {
        state.withLock { state in
            state.lanes.removeAll { $0.value.closed != nil }
            state.lastSeq = state.lastSeq.filter { state.lanes[$0.key] != nil }
            state.events.removeAll()
            state.closed.removeAll()
        }
    }

    /// Events kept now.
    public var count: Int { state.withLock { $0.events.count } }
}

/// Which events a read or a subscription wants.
public struct TimelineFilter: Sendable {
    /// nil: every lane.
    public var lanes: Set<String>?
    public var kinds: Set<TimelineEvent.Kind>?
    /// Times in epoch microseconds, inclusive.
    public var sinceMicros: Int64?
    public var untilMicros: Int64?
    public var afterSeq: Int64 = 0
    public var limit = Int.max

    public init() {}

    public func matches(_ event: TimelineEvent) -> Bool {
        guard event.seq > afterSeq else { return false }
        if let lanes, !lanes.contains(event.lane) { return false }
        if let kinds, !kinds.contains(event.kind) { return false }
        if let sinceMicros, event.time.microseconds < sinceMicros { return false }
        if let untilMicros, event.time.microseconds > untilMicros { return false }
        return true
    }
}

/// What a client or connection records its steps through: its lane and the timeline.
public struct TimelineRecorder: Sendable {
    public let lane: String
    let timelines: Timelines

    public func record(_ kind: TimelineEvent.Kind, _ fields: [(String, JSON)] = [], changed: [TimelineChange] = [], commitTime: Timestamp? = nil) {
        timelines.record(lane, kind, fields, changed: changed, commitTime: commitTime)
    }
}

/// The events of one `Timelines.subscribe`, ended by `finish()` or at shutdown.
public struct TimelineSubscription: Sendable {
    public let events: AsyncStream<TimelineEvent>
    public let finish: @Sendable () -> Void
}
