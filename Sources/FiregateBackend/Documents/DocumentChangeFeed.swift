import DequeModule
import FiregateModel
import Synchronization

/// The ordered stream of a database's durable commits, fanned out to every subscriber
/// (SSE listeners today, edge clients' watch connections next).
///
/// Each subscription buffers at most `bufferLimit` commits; a reader that falls further
/// behind gets `.overflow` (resynchronise from the current state) instead of an unbounded
/// queue — never a silent gap.
public final class DocumentChangeFeed: Sendable {
    private struct State {
        var subscribers: [Int: FeedSubscription] = [:]
        var nextID = 0
        var lastPublished: Int64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Subscribes to commits published from now on.
    public func subscribe(bufferLimit: Int) -> FeedSubscription {
        state.withLock { state in
            state.nextID += 1
            let subscription = FeedSubscription(id: state.nextID, bufferLimit: bufferLimit, feed: self, startsAfter: state.lastPublished)
            state.subscribers[state.nextID] = subscription
            return subscription
        }
    }

    func unsubscribe(_ id: Int) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    /// Called once per durable commit, in commit order.
    func publish(_ record: CommitRecord) {
        let subscribers = state.withLock { state in
            state.lastPublished = record.sequence
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.deliver(.commit(record)) }
    }

    /// Ends every subscription with `error` (database reset, shutdown).
    func closeAll(_ error: FiregateError) {
        let subscribers = state.withLock { state -> [FeedSubscription] in
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.deliver(.closed(error)) }
    }

    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// The sequence of the newest commit handed to subscribers: a subscriber that has processed
    /// up to here has seen everything published so far.
    public var lastPublished: Int64 { state.withLock { $0.lastPublished } }
}

/// What a subscriber receives.
public enum FeedEvent: Sendable {
    case commit(CommitRecord)
    /// The subscriber fell behind by more than its buffer: commits were dropped.
    case overflow
    /// The feed ended (reset or shutdown) with this status.
    case closed(FiregateError)
    /// Nothing happened for a while: the subscriber may send a keep-alive.
    case heartbeat
}

/// One subscriber's bounded queue, consumed as an `AsyncSequence`.
public final class FeedSubscription: AsyncSequence, Sendable {
    public typealias Element = FeedEvent

    fileprivate struct State {
        var buffer: Deque<CommitRecord> = []
        var overflowed = false
        var closed: FiregateError?
        var finished = false
        var heartbeat = false
        var waiter: CheckedContinuation<FeedEvent?, Never>?
    }

    let id: Int
    let bufferLimit: Int
    /// The last sequence published before this subscription began; it receives the later ones.
    public let startsAfter: Int64
    private weak let feedReference: DocumentChangeFeed?
    private let state = Mutex(State())

    init(id: Int, bufferLimit: Int, feed: DocumentChangeFeed, startsAfter: Int64) {
        self.id = id
        self.bufferLimit = bufferLimit
        self.startsAfter = startsAfter
        self.feedReference = feed
    }

    public func deliver(_ event: FeedEvent) {
        let resume = state.withLock { state -> (CheckedContinuation<FeedEvent?, Never>, FeedEvent)? in
            guard !state.finished else { return nil }
            switch event {
            case .commit(let record):
                if let waiter = state.waiter, state.buffer.isEmpty, !state.overflowed {
                    state.waiter = nil
                    return (waiter, event)
                }
                if state.buffer.count >= bufferLimit {
                    state.buffer.removeAll()
                    state.overflowed = true
                } else if !state.overflowed {
                    state.buffer.append(record)
                }
            case .overflow:
                state.overflowed = true
            case .heartbeat:
                state.heartbeat = true
            case .closed(let error):
                state.closed = error
                state.buffer.removeAll()
            }
            if let waiter = state.waiter, let next = State.take(&state) {
                state.waiter = nil
                return (waiter, next)
            }
            return nil
        }
        if let (waiter, event) = resume { waiter.resume(returning: event) }
    }

    /// Stops the subscription; a pending `next()` returns nil.
    public func cancel() {
        feedReference?.unsubscribe(id)
        let waiter = state.withLock { state -> CheckedContinuation<FeedEvent?, Never>? in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    /// The next event; nil once cancelled (the subscription or the calling task) or after
    /// `.closed` was delivered.
    public func next() async -> FeedEvent? {
        await withTaskCancellationHandler {
            await waitForNext()
        } onCancel: {
            cancel()
        }
    }

    private func waitForNext() async -> FeedEvent? {
        await withCheckedContinuation { (continuation: CheckedContinuation<FeedEvent?, Never>) in
            let ready = state.withLock { state -> FeedEvent?? in
                if state.finished { return .some(nil) }
                if let event = State.take(&state) { return .some(event) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Commits waiting in the buffer (for metrics and tests).
    public var buffered: Int { state.withLock { $0.buffer.count } }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let subscription: FeedSubscription
        public mutating func next() async -> FeedEvent? { await subscription.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(subscription: self) }
}

fileprivate extension FeedSubscription.State {
    /// The next event to hand out, in priority: overflow, buffered commits, close.
    static func take(_ state: inout FeedSubscription.State) -> FeedEvent? {
        if state.overflowed {
            state.overflowed = false
            return .overflow
        }
        if let record = state.buffer.popFirst() { return .commit(record) }
        if let error = state.closed {
            state.finished = true
            return .closed(error)
        }
        if state.heartbeat {
            state.heartbeat = false
            return .heartbeat
        }
        return nil
    }
}
