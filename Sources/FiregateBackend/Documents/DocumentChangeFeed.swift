import DequeModule
import FiregateModel
import Synchronization

/// The ordered stream of a database's durable commits, fanned out to its subscribers: every
/// commit to those without an interest (SSE listeners), and to those with one (edge clients'
/// watches) only the commits touching its collections, found through an index by collection.
///
/// Each subscription buffers at most `bufferLimit` commits; a reader that falls further
/// behind gets `.overflow` (resynchronise from the current state) instead of an unbounded
/// queue — never a silent gap.
public final class DocumentChangeFeed: Sendable {
    private struct State {
        var subscribers: [Int: FeedSubscription] = [:]
        /// Subscribers without an interest: they get every commit.
        var everything: Set<Int> = []
        /// Subscribers with an interest, by the keys of their queries.
        var interested: [FeedInterest.Key: Set<Int>] = [:]
        var keys: [Int: Set<FeedInterest.Key>] = [:]
        var nextID = 0
        var lastPublished: Int64 = 0

        mutating func register(_ subscription: FeedSubscription, keys: Set<FeedInterest.Key>?) {
            subscribers[subscription.id] = subscription
            if let keys { index(subscription.id, keys) } else { everything.insert(subscription.id) }
        }

        mutating func index(_ id: Int, _ newKeys: Set<FeedInterest.Key>) {
            for key in keys[id] ?? [] {
                interested[key]?.remove(id)
                if interested[key]?.isEmpty == true { interested[key] = nil }
            }
            keys[id] = newKeys
            for key in newKeys { interested[key, default: []].insert(id) }
        }

        mutating func remove(_ id: Int) -> FeedSubscription? {
            everything.remove(id)
            index(id, [])
            keys[id] = nil
            return subscribers.removeValue(forKey: id)
        }
    }

    private let state = Mutex(State())

    public init() {}

    /// Subscribes to commits published from now on. With `interest`, only commits touching
    /// its queries' collections are handed out; the others never reach the subscriber and
    /// still count as handled (see `FeedSubscription.waitUntilHandled`).
    public func subscribe(bufferLimit: Int, interest: FeedInterest? = nil) -> FeedSubscription {
        func register(_ keys: Set<FeedInterest.Key>?) -> FeedSubscription {
            state.withLock { state in
                state.nextID += 1
                let subscription = FeedSubscription(id: state.nextID, bufferLimit: bufferLimit, feed: self, startsAfter: state.lastPublished,
                                                    interest: interest)
                state.register(subscription, keys: keys)
                return subscription
            }
        }
        guard let interest else { return register(nil) }
        var subscription: FeedSubscription!
        interest.attach(to: self) { keys in
            subscription = register(keys)
            return subscription.id
        }
        return subscription
    }

    /// A subscription's interest changed.
    func reindex(_ id: Int, keys: Set<FeedInterest.Key>) {
        state.withLock { state in
            guard state.subscribers[id] != nil else { return }
            state.index(id, keys)
        }
    }

    func unsubscribe(_ id: Int) {
        // The interest's lock is never taken under the feed's (see `FeedInterest.attach`).
        let removed = state.withLock { $0.remove(id) }
        removed?.interest?.detach(id: id)
    }

    /// Called once per durable commit, in commit order. Each subscriber it is for learns the
    /// commit's sequence under the feed's lock, so `waitUntilHandled` never misses one on its
    /// way.
    func publish(_ record: CommitRecord) {
        let subscribers = state.withLock { state in
            state.lastPublished = record.sequence
            var ids = state.everything
            if !state.interested.isEmpty {
                for change in record.changes {
                    for key in FeedInterest.keys(of: change.path) { ids.formUnion(state.interested[key] ?? []) }
                }
            }
            return ids.compactMap { id -> FeedSubscription? in
                let subscriber = state.subscribers[id]
                subscriber?.relevantThrough.store(record.sequence, ordering: .releasing)
                return subscriber
            }
        }
        for subscriber in subscribers { subscriber.deliver(.commit(record)) }
    }

    /// Ends every subscription with `error` (database reset, shutdown). `through`: the sequence
    /// the database has reached without a commit (a reset takes one), where subscriptions made
    /// from now on start — else a new stream would wait for a commit to be as new as its targets.
    func closeAll(_ error: FiregateError, through sequence: Int64? = nil) {
        let subscribers = state.withLock { state -> [FeedSubscription] in
            defer { state = State(nextID: state.nextID, lastPublished: max(state.lastPublished, sequence ?? 0)) }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers {
            subscriber.interest?.detach(id: subscriber.id)
            subscriber.deliver(.closed(error))
        }
    }

    /// Wakes every subscriber with a heartbeat (the rules changed: listens judge themselves again).
    public func nudgeAll() {
        for subscriber in state.withLock({ Array($0.subscribers.values) }) { subscriber.deliver(.heartbeat) }
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
///
/// It also knows how far its consumer got: a commit is *handled* once the consumer asked for
/// the next event after it (so it processed it), or when the subscription's interest rejected it
/// with nothing before it pending. `waitUntilHandled` lets a consumer wait for that.
public final class FeedSubscription: AsyncSequence, Sendable {
    public typealias Element = FeedEvent

    fileprivate enum Item {
        case commit(CommitRecord)
        /// Commits up to this sequence the interest rejected while earlier ones were pending.
        case skip(Int64)
    }

    fileprivate struct State {
        var buffer: Deque<Item> = []
        var overflowed = false
        /// The newest commit dropped by an overflow.
        var overflowThrough: Int64 = 0
        var closed: FiregateError?
        var finished = false
        var heartbeat = false
        var waiter: CheckedContinuation<FeedEvent?, Never>?
        /// A polling consumer's wake-up, armed when its last poll found nothing.
        var waker: (@Sendable () -> Void)?
        /// The newest commit handed to the consumer, and the newest known handled.
        var handedOut: Int64 = 0
        var handled: Int64 = 0
        var handledWaiters: [(target: Int64, continuation: CheckedContinuation<Void, Never>)] = []
    }

    let id: Int
    let bufferLimit: Int
    /// The last sequence published before this subscription began; it receives the later ones.
    public let startsAfter: Int64
    let interest: FeedInterest?
    /// The newest commit published for this subscriber (set by the feed as it publishes):
    /// later ones were not for it, so handling this one handles everything published.
    let relevantThrough: Atomic<Int64>
    private weak let feedReference: DocumentChangeFeed?
    private let state: Mutex<State>

    init(id: Int, bufferLimit: Int, feed: DocumentChangeFeed, startsAfter: Int64, interest: FeedInterest? = nil) {
        self.id = id
        self.bufferLimit = bufferLimit
        self.startsAfter = startsAfter
        self.interest = interest
        relevantThrough = Atomic(startsAfter)
        self.feedReference = feed
        var initial = State()
        initial.handled = startsAfter
        initial.handedOut = startsAfter
        state = Mutex(initial)
    }

    public func deliver(_ event: FeedEvent) {
        var relevant = true
        // The index found the subscriber by collection; a collection group's parent is checked here.
        if case .commit(let record) = event, let interest { relevant = interest.matches(record) }
        var handledWaiters: [CheckedContinuation<Void, Never>] = []
        var wake: (@Sendable () -> Void)?
        defer {
            for waiter in handledWaiters { waiter.resume() }
            wake?()
        }
        let resume = state.withLock { state -> (CheckedContinuation<FeedEvent?, Never>, FeedEvent)? in
            guard !state.finished else { return nil }
            // A polling consumer is woken by anything it would take (not by a skipped commit).
            defer {
                if state.waker != nil, State.hasEvent(&state) {
                    wake = state.waker
                    state.waker = nil
                }
            }
            switch event {
            case .commit(let record) where !relevant:
                if state.waiter != nil || state.waker != nil, state.buffer.isEmpty, !state.overflowed {
                    // The consumer is idle with nothing pending: the commit is handled now.
                    state.handled = Swift.max(state.handled, record.sequence)
                    handledWaiters = State.takeHandledWaiters(&state)
                } else if case .skip? = state.buffer.last {
                    state.buffer[state.buffer.count - 1] = .skip(record.sequence)
                } else if state.overflowed {
                    state.overflowThrough = record.sequence
                } else {
                    // Consecutive skips coalesce, so these add at most one item per commit.
                    state.buffer.append(.skip(record.sequence))
                }
                return nil
            case .commit(let record):
                if let waiter = state.waiter, state.buffer.isEmpty, !state.overflowed {
                    state.waiter = nil
                    state.handedOut = record.sequence
                    return (waiter, event)
                }
                if state.buffer.count >= bufferLimit {
                    state.buffer.removeAll()
                    state.overflowed = true
                    state.overflowThrough = record.sequence
                } else if !state.overflowed {
                    state.buffer.append(.commit(record))
                } else {
                    state.overflowThrough = record.sequence
                }
            case .overflow:
                state.overflowed = true
            case .heartbeat:
                state.heartbeat = true
            case .closed(let error):
                state.closed = error
                state.buffer.removeAll()
            }
            // Taking may pass skipped commits, which makes them handled.
            defer { handledWaiters = State.takeHandledWaiters(&state) }
            if let waiter = state.waiter, let next = State.take(&state) {
                state.waiter = nil
                return (waiter, next)
            }
            return nil
        }
        if let (waiter, event) = resume { waiter.resume(returning: event) }
    }

    /// Returns once every commit up to `sequence` is handled (or the subscription ended).
    /// Commits never published for this subscriber need no handling.
    public func waitUntilHandled(through requested: Int64) async {
        let sequence = Swift.min(requested, relevantThrough.load(ordering: .acquiring))
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.finished || state.handled >= sequence { return true }
                state.handledWaiters.append((sequence, continuation))
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// Stops the subscription; a pending `next()` returns nil, waits for handling end.
    public func cancel() {
        feedReference?.unsubscribe(id)
        let (waiter, handledWaiters) = state.withLock { state -> (CheckedContinuation<FeedEvent?, Never>?, [CheckedContinuation<Void, Never>]) in
            state.finished = true
            defer {
                state.waiter = nil
                state.waker = nil
                state.handledWaiters.removeAll()
            }
            return (state.waiter, state.handledWaiters.map(\.continuation))
        }
        waiter?.resume(returning: nil)
        for handled in handledWaiters { handled.resume() }
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
            var handledWaiters: [CheckedContinuation<Void, Never>] = []
            defer { for waiter in handledWaiters { waiter.resume() } }
            let ready = state.withLock { state -> FeedEvent?? in
                if state.finished { return .some(nil) }
                // Asking for more means everything handed out before has been processed.
                state.handled = Swift.max(state.handled, state.handedOut)
                defer { handledWaiters = State.takeHandledWaiters(&state) }
                if let event = State.take(&state) { return .some(event) }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// For a consumer that is not a task (a stream served on its connection's event loop): the
    /// next event if one is ready. Otherwise nil, and `wake` is called once (from the
    /// publishing thread) when an event arrives; `finished` says the subscription has ended.
    public func poll(orWake wake: @escaping @Sendable () -> Void) -> (event: FeedEvent?, finished: Bool) {
        var handledWaiters: [CheckedContinuation<Void, Never>] = []
        defer { for waiter in handledWaiters { waiter.resume() } }
        return state.withLock { state in
            if state.finished { return (nil, true) }
            // Polling again means everything handed out before has been processed.
            state.handled = Swift.max(state.handled, state.handedOut)
            defer { handledWaiters = State.takeHandledWaiters(&state) }
            if let event = State.take(&state) { return (event, false) }
            state.waker = wake
            return (nil, false)
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
    /// Whether `take` would hand out an event (skipped commits alone are not one). In place: a
    /// getter on the state copied all of it, at each subscriber a commit is published to.
    static func hasEvent(_ state: inout FeedSubscription.State) -> Bool {
        state.overflowed || state.closed != nil || state.heartbeat || state.buffer.contains { if case .commit = $0 { true } else { false } }
    }

    /// The next event to hand out, in priority: overflow, buffered commits, close. Skipped
    /// commits at the front count as handled (everything before them was).
    static func take(_ state: inout FeedSubscription.State) -> FeedEvent? {
        if state.overflowed {
            state.overflowed = false
            state.handedOut = Swift.max(state.handedOut, state.overflowThrough)
            return .overflow
        }
        while let item = state.buffer.popFirst() {
            switch item {
            case .skip(let sequence):
                state.handled = Swift.max(state.handled, sequence)
                state.handedOut = Swift.max(state.handedOut, sequence)
            case .commit(let record):
                state.handedOut = record.sequence
                return .commit(record)
            }
        }
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

    /// The handled-waiters now satisfied, removed from the state.
    static func takeHandledWaiters(_ state: inout FeedSubscription.State) -> [CheckedContinuation<Void, Never>] {
        guard !state.handledWaiters.isEmpty else { return [] }
        var ready: [CheckedContinuation<Void, Never>] = []
        state.handledWaiters.removeAll { waiter in
            guard waiter.target <= state.handled else { return false }
            ready.append(waiter.continuation)
            return true
        }
        return ready
    }
}
