import FiregateModel
import FiregateStore
import Synchronization

/// Persists tree writes in exactly the order namespaces applied them: `enqueue` is synchronous
/// (called inside the namespace actor), and one drain task commits everything waiting at a
/// time as a single durable storage commit, then wakes the writers.
final class TreeWriteQueue: Sendable {
    private struct State {
        var pending: [(TreeStorageBatch, TreeDurability, TreeDelivery?)] = []
        var draining = false
    }

    private let storage: any TreeStorage
    private let state = Mutex(State())

    init(storage: any TreeStorage) {
        self.storage = storage
    }

    /// Queues `batch`; once it is durable, `delivery` (the write's stream events) runs, in write
    /// order, before the writer is woken.
    func enqueue(_ batch: TreeStorageBatch, delivery: TreeDelivery? = nil) -> TreeDurability {
        let durability = TreeDurability()
        let start = state.withLock { state -> Bool in
            state.pending.append((batch, durability, delivery))
            if state.draining { return false }
            state.draining = true
            return true
        }
        if start { Task { await self.drain() } }
        return durability
    }

    private func drain() async {
        while true {
            let items = state.withLock { state -> [(TreeStorageBatch, TreeDurability, TreeDelivery?)] in
                let items = state.pending
                state.pending.removeAll(keepingCapacity: true)
                if items.isEmpty { state.draining = false }
                return items
            }
            if items.isEmpty { return }
            let result: Result<Void, any Error>
            do {
                try await storage.commit(items.map(\.0))
                result = .success(())
            } catch {
                result = .failure(error)
            }
            if case .success = result {
                for (_, _, delivery) in items { delivery?.run() }
            }
            for (_, durability, _) in items { durability.resolve(result) }
        }
    }
}

/// The promise that one write is on disk.
public final class TreeDurability: Sendable {
    private struct State {
        var result: Result<Void, any Error>?
        var waiters: [CheckedContinuation<Void, any Error>] = []
    }

    private let state = Mutex(State())

    init() {}

    /// Already durable (nothing to write).
    static func done() -> TreeDurability {
        let durability = TreeDurability()
        durability.resolve(.success(()))
        return durability
    }

    func resolve(_ result: Result<Void, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.result = result
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// Returns once the write is durable; throws if storing it failed.
    public func wait() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let result = state.withLock { state -> Result<Void, any Error>? in
                if state.result == nil { state.waiters.append(continuation) }
                return state.result
            }
            if let result { continuation.resume(with: result) }
        }
    }
}

/// The stream events of one write, held until the write is durable: no stream hears of data a
/// crash could lose.
struct TreeDelivery: Sendable {
    let sequence: Int64
    let frames: [(TreeStreamSubscription, [TreeStreamFrame])]
    /// Called for a stream whose buffer overflowed, to resync it with the current value.
    let overflow: @Sendable (TreeStreamSubscription) -> Void

    func run() {
        for (subscription, frames) in frames where sequence > subscription.startSequence.withLock({ $0 }) {
            for frame in frames where !subscription.offer(frame) {
                overflow(subscription)
                break
            }
        }
    }
}
