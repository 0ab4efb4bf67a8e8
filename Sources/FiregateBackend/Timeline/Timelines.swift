import DequeModule
import FiregateModel
import OrderedCollections
import Synchronization

/// The timeline of every edge client and real SDK connection (docs/timeline.md): the one
/// owner of its events. Surfaces and clients record steps through a `TimelineRecorder`; the
/// routes read them filtered, and live subscribers hear each new one.
///
/// Memory is bounded twice: the newest `capacity` events over all lanes stay, and only the
/// newest `closedLaneLimit` closed lanes — a server that sees connections come and go by the
/// thousand keeps the recent ones' stories, not all of them. Recording costs one append under a
/// lock; JSON is rendered only when someone reads.
public final class Timelines: Sendable {
    /// Events kept over all lanes, and closed lanes kept, by default.
    public static let defaultCapacity = 100_000
    public static let defaultClosedLaneLimit = 256
    public let capacity: Int
    public let closedLaneLimit: Int

    private struct Lane {
        var info: TimelineLane
        var events = Deque<TimelineEvent>()
    }

    private struct Subscriber {
        let filter: TimelineFilter
        let continuation: AsyncStream<TimelineEvent>.Continuation
    }

    private struct State {
        var nextSeq: Int64 = 1
        var lanes: OrderedDictionary<String, Lane> = [:]
        /// Every kept event's seq and lane, oldest first, to find the oldest one to drop. It
        /// may still name events of lanes dropped whole; those are skipped.
        var order = Deque<(seq: Int64, lane: String)>()
        var count = 0
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
            if state.lanes[info.id]?.info.closed != nil { state.closed.removeAll { $0 == info.id } }
            state.lanes[info.id, default: Lane(info: info)].info = info
        }
        let recorder = TimelineRecorder(lane: info.id, timelines: self)
        recorder.lifecycle(action)
        return recorder
    }

    /// The recorder of a lane, opened or not.
    public func recorder(_ lane: String) -> TimelineRecorder { TimelineRecorder(lane: lane, timelines: self) }

    /// A client configured for another project after its lane opened.
    public func setProject(_ project: String?, of lane: String) {
        state.withLock { $0.lanes[lane]?.info.project = project }
    }

    /// Records the lane's last `lifecycle` step and marks it closed; past `closedLaneLimit`
    /// closed lanes, the oldest is forgotten.
    public func close(_ lane: String, action: String, fields: [(String, JSON)] = []) {
        record(lane, .lifecycle, [("action", .string(action))] + fields)
        let time = clock.now()
        state.withLock { state in
            guard state.lanes[lane] != nil, state.lanes[lane]!.info.closed == nil else { return }
            state.lanes[lane]!.info.closed = time
            state.closed.append(lane)
            if state.closed.count > closedLaneLimit, let oldest = state.closed.popFirst(), let dropped = state.lanes.removeValue(forKey: oldest) {
                state.count -= dropped.events.count
            }
        }
    }

    func record(_ lane: String, _ kind: TimelineEvent.Kind, _ fields: [(String, JSON)], changed: [TimelineChange] = []) {
        let time = clock.now()
        state.withLock { state in
            let event = TimelineEvent(seq: state.nextSeq, lane: lane, time: time, kind: kind, fields: fields, changed: changed)
            state.nextSeq += 1
            // A step of a lane nobody opened (a connection after a reset) opens it as it can.
            state.lanes[lane, default: Lane(info: TimelineLane(unopened: lane, at: time))].events.append(event)
            state.order.append((event.seq, lane))
            state.count += 1
            while state.count > capacity { Timelines.dropOldest(&state) }
            if state.order.count > 2 * capacity + 1024 { Timelines.compactOrder(&state) }
            for subscriber in state.subscribers.values where subscriber.filter.matches(event) {
                subscriber.continuation.yield(event)
            }
        }
    }

    private static func dropOldest(_ state: inout State) {
        while let (seq, lane) = state.order.popFirst() {
            guard state.lanes[lane]?.events.first?.seq == seq else { continue }
            state.lanes[lane]!.events.removeFirst()
            state.count -= 1
            if state.lanes[lane]!.events.isEmpty, state.lanes[lane]!.info.closed != nil {
                state.lanes.removeValue(forKey: lane)
                state.closed.removeAll { $0 == lane }
            }
            return
        }
    }

    /// Forgets the entries of `order` whose events are gone with their lanes.
    private static func compactOrder(_ state: inout State) {
        state.order = Deque(state.order.filter { entry in
            guard let first = state.lanes[entry.lane]?.events.first else { return false }
            return entry.seq >= first.seq
        })
    }

    private static func matching(_ filter: TimelineFilter, in state: State) -> [TimelineEvent] {
        var matching: [TimelineEvent] = []
        let lanes = filter.lanes.map { ids in ids.compactMap { state.lanes[$0] } } ?? Array(state.lanes.values)
        for lane in lanes { matching += lane.events.filter(filter.matches) }
        if lanes.count > 1 { matching.sort { $0.seq < $1.seq } }
        return matching.count > filter.limit ? Array(matching.suffix(filter.limit)) : matching
    }

    /// The kept events that pass `filter`, oldest first (the newest `filter.limit` of them).
    public func events(_ filter: TimelineFilter) -> [TimelineEvent] {
        state.withLock { Timelines.matching(filter, in: $0) }
    }

    /// The lanes known, in the order they opened; `ids` narrows them.
    public func lanes(_ ids: Set<String>? = nil) -> [TimelineLane] {
        state.withLock { state in state.lanes.values.map(\.info).filter { ids?.contains($0.id) ?? true } }
    }

    public func lane(_ id: String) -> TimelineLane? { state.withLock { $0.lanes[id]?.info } }

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
            state.lanes.removeAll { $0.value.info.closed != nil }
            for id in state.lanes.keys { state.lanes[id]!.events.removeAll() }
            state.order.removeAll()
            state.closed.removeAll()
            state.count = 0
        }
    }

    /// Events kept now.
    public var count: Int { state.withLock { $0.count } }

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

    public func record(_ kind: TimelineEvent.Kind, _ fields: [(String, JSON)] = [], changed: [TimelineChange] = []) {
        timelines.record(lane, kind, fields, changed: changed)
    }
}

/// The events of one `Timelines.subscribe`, ended by `finish()` or at shutdown.
public struct TimelineSubscription: Sendable {
    public let events: AsyncStream<TimelineEvent>
    public let finish: @Sendable () -> Void
}
