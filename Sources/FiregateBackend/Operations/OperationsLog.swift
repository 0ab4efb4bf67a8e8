import DequeModule
import FiregateModel
import Synchronization

/// What happened on the server, in order, for the dashboard's live log and for tests
/// (`GET /emulator/v1/events`): commits, tree writes, client network flips, write outcomes,
/// resets, imports, clock changes.
///
/// Recording is cheap (an enum appended under a lock) because it sits on the commit path;
/// JSON is rendered only for subscribers. The last `capacity` events stay for late joiners.
public final class OperationsLog: Sendable {
    public static let capacity = 1000

    private struct State {
        var nextSeq: Int64 = 1
        /// Events recorded since start, by kind (metrics read them).
        var counts: [String: Int64] = [:]
        var recent = Deque<OperationEvent>()
        var subscribers: [Int: AsyncStream<OperationEvent>.Continuation] = [:]
        var nextSubscriber = 0
    }

    private let state = Mutex(State())
    private let clock: ServerClock

    public init(clock: ServerClock) {
        self.clock = clock
    }

    public func record(_ detail: OperationEvent.Detail, at time: Timestamp? = nil) {
        let time = time ?? clock.now()
        state.withLock { state in
            let event = OperationEvent(seq: state.nextSeq, time: time, detail: detail)
            state.nextSeq += 1
            state.counts[event.kind, default: 0] += 1
            state.recent.append(event)
            if state.recent.count > OperationsLog.capacity { state.recent.removeFirst() }
            for continuation in state.subscribers.values { continuation.yield(event) }
        }
    }

    /// A subscription: the kept events after `afterSeq` (or the last `backlog` ones), then
    /// every new event. A subscriber that falls more than `capacity` events behind loses the
    /// oldest ones rather than growing the server's memory.
    public func subscribe(afterSeq: Int64? = nil, backlog: Int = 0) -> OperationsSubscription {
        let (stream, continuation) = AsyncStream<OperationEvent>.makeStream(bufferingPolicy: .bufferingNewest(OperationsLog.capacity))
        let id = state.withLock { state -> Int in
            let kept: [OperationEvent]
            if let afterSeq {
                kept = state.recent.filter { $0.seq > afterSeq }
            } else {
                kept = Array(state.recent.suffix(max(0, min(backlog, OperationsLog.capacity))))
            }
            for event in kept { continuation.yield(event) }
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return OperationsSubscription(events: stream, finish: { continuation.finish() })
    }

    /// How many events of each kind were recorded since start.
    public var counts: [String: Int64] { state.withLock { $0.counts } }

    /// Open subscriptions (for metrics and tests).
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Ends every subscription (shutdown).
    public func finishAll() {
        let continuations = state.withLock { state in
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for continuation in continuations { continuation.finish() }
    }
}

/// The events of one `OperationsLog.subscribe`, ended by `finish()` or by the log.
public struct OperationsSubscription: Sendable {
    public let events: AsyncStream<OperationEvent>
    public let finish: @Sendable () -> Void
}
