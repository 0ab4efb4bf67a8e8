import FiregateModel
import FiregateStore
import Synchronization

/// Persists tree writes in exactly the order namespaces applied them: `enqueue` is synchronous
/// (called inside the namespace actor), and one drain task commits everything waiting at a
/// time as a single durable storage commit, then wakes the writers.
final class TreeWriteQueue: Sendable {
    private struct State {
        var pending: [(TreeStorageBatch, TreeDurability)] = []
        var draining = false
    }

    private let storage: any TreeStorage
    private let state = Mutex(State())

    init(storage: any TreeStorage) {
        self.storage = storage
    }

    func enqueue(_ batch: TreeStorageBatch) -> TreeDurability {
        let durability = TreeDurability()
        let start = state.withLock { state -> Bool in
            state.pending.append((batch, durability))
            if state.draining { return false }
            state.draining = true
            return true
        }
        if start { Task { await self.drain() } }
        return durability
    }

    private func drain() async {
        while true {
            let items = state.withLock { state -> [(TreeStorageBatch, TreeDurability)] in
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
            for (_, durability) in items { durability.resolve(result) }
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
