import DequeModule
import FiregateModel
import OrderedCollections
import Synchronization

/// The timeline of every edge client and real SDK connection (docs/timeline.md): the one
/// owner of its events. Surfaces and clients record steps through a `TimelineRecorder`; the
/// routes read them filtered, and live subscribers hear each new one.
///
/// Memory is bounded: the newest `capacity` events over all lanes stay, and a closed lane is
/// forgotten once none of its events remain. Recording costs one append under a lock; JSON is
/// rendered only when someone reads.
public final class Timelines: Sendable {
    /// Events kept over all lanes, by default.
    public static let defaultCapacity = 100_000
    public let capacity: Int

    private struct Subscriber {
        let filter: TimelineFilter
        let continuation: AsyncStream<TimelineEvent>.Continuation
    }

    private struct State {
        var nextSeq: Int64 = 1
        var events = Deque<TimelineEvent>()
        var lanes: OrderedDictionary<String, TimelineLane> = [:]
        var subscribers: [Int: Subscriber] = [:]
        var nextSubscriber = 0
    }

    private let state = Mutex(State())
    public let clock: ServerClock

    public init(clock: ServerClock, capacity: Int = Timelines.defaultCapacity) {
        self.clock = clock
        self.capacity = capacity
    }

    /// Opens a lane (again, for a client restored or recreated under the same id) and records
    /// its `lifecycle` step; returns the recorder its owner keeps.
    @discardableResult
    public func open(kind: String, name: String, protocol: String, project: String?, appId: String? = nil, action: String) -> TimelineRecorder {
        let lane = TimelineLane(kind: kind, name: name, protocol: `protocol`, project: project, appId: appId, opened: clock.now())
        state.withLock { $0.lanes[lane.id] = lane }
        let recorder = TimelineRecorder(lane: lane.id, timelines: self)
        recorder.record(.lifecycle, [("action", .string(action))])
        return recorder
    }

    /// The recorder of a lane, opened or not (events of an unknown lane open nothing and are kept).
    public func recorder(_ lane: String) -> TimelineRecorder { TimelineRecorder(lane: lane, timelines: self) }

    /// A client configured for another project after its lane opened.
    public func setProject(_ project: String?, of lane: String) {
        state.withLock { $0.lanes[lane]?.project = project }
    }

    /// Records the lane's last `lifecycle` step and marks it closed.
    public func close(_ lane: String, action: String, fields: [(String, JSON)] = []) {
        record(lane, .lifecycle, [("action", .string(action))] + fields)
        let time = clock.now()
        state.withLock { $0.lanes[lane]?.closed = time }
    }

    func record(_ lane: String, _ kind: TimelineEvent.Kind, _ fields: [(String, JSON)]) {
        let time = clock.now()
        state.withLock { state in
            let event = TimelineEvent(seq: state.nextSeq, lane: lane, time: time, kind: kind, fields: fields)
            state.nextSeq += 1
            state.events.append(event)
            state.lanes[lane]?.lastSeq = event.seq
            if state.events.count > capacity { Timelines.dropOldest(&state) }
            for subscriber in state.subscribers.values where subscriber.filter.matches(event) {
                subscriber.continuation.yield(event)
            }
        }
    }

    private static func dropOldest(_ state: inout State) {
        let dropped = state.events.removeFirst()
        if let lane = state.lanes[dropped.lane], lane.closed != nil, lane.lastSeq <= dropped.seq {
            state.lanes.removeValue(forKey: dropped.lane)
        }
    }

    /// The kept events that pass `filter`, oldest first (the newest `filter.limit` of them).
    public func events(_ filter: TimelineFilter) -> [TimelineEvent] {
        state.withLock { state in
            var matching: [TimelineEvent] = []
            for event in state.events.reversed() where filter.matches(event) {
                matching.append(event)
                if matching.count >= filter.limit { break }
            }
            return matching.reversed()
        }
    }

    /// The lanes known, in the order they opened; `ids` narrows them.
    public func lanes(_ ids: Set<String>? = nil) -> [TimelineLane] {
        state.withLock { state in state.lanes.values.filter { ids?.contains($0.id) ?? true } }
    }

    public func lane(_ id: String) -> TimelineLane? { state.withLock { $0.lanes[id] } }

    /// The kept events after `filter.afterSeq` that pass the filter, then every new one. A
    /// subscriber that falls `capacity` events behind loses the oldest rather than growing memory.
    public func subscribe(_ filter: TimelineFilter) -> TimelineSubscription {
        let (stream, continuation) = AsyncStream<TimelineEvent>.makeStream(bufferingPolicy: .bufferingNewest(capacity))
        let id = state.withLock { state -> Int in
            for event in state.events where filter.matches(event) { continuation.yield(event) }
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
            state.events.removeAll()
            state.lanes.removeAll { $0.value.closed != nil }
        }
    }

    public var count: Int { state.withLock { $0.events.count } }

    /// Ends every subscription (shutdown).
    public func finishAll() {
        let continuations = state.withLock { state in
            defer { state.subscribers.removeAll() }
            return state.subscribers.values.map(\.continuation)
        }
        for continuation in continuations { continuation.finish() }
    }
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

    public func record(_ kind: TimelineEvent.Kind, _ fields: [(String, JSON)] = []) {
        timelines.record(lane, kind, fields)
    }
}

/// The events of one `Timelines.subscribe`, ended by `finish()` or at shutdown.
public struct TimelineSubscription: Sendable {
    public let events: AsyncStream<TimelineEvent>
    public let finish: @Sendable () -> Void
}
