import Foundation
import GRDB
import Synchronization

/// Group commit: callers hand in units of work; one background writer runs every unit
/// waiting at that moment inside a single transaction (one fsync), then resumes them all.
///
/// Units run in the order they were submitted, each in its own savepoint so a failing unit
/// rolls back alone and reports its error to its caller only.
public final class GroupCommitter: Sendable {
    public typealias Work = @Sendable (Database) throws -> Void

    public typealias Completion = @Sendable (Result<Void, any Error>) -> Void

    private struct Pending {
        let work: Work
        let completion: Completion
    }

    private struct State {
        var queue: [Pending] = []
        var draining = false
    }

    private let writer: any DatabaseWriter
    private let state = Mutex(State())
    private let thread = DispatchQueue(label: "firegate.group-commit")

    init(writer: any DatabaseWriter) {
        self.writer = writer
    }

    /// Runs `work` in a durable transaction; returns once it is on disk.
    public func commit(_ work: @escaping Work) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enqueue(work) { continuation.resume(with: $0) }
        }
    }

    /// Queues `work` without waiting. Completions are called on the writer thread, in the
    /// order the work was enqueued, once its transaction is durable (or failed) — so a caller
    /// that enqueues under its own lock gets a durable, ordered stream of completions.
    public func enqueue(_ work: @escaping Work, completion: @escaping Completion) {
        let start = state.withLock { state -> Bool in
            state.queue.append(Pending(work: work, completion: completion))
            if state.draining { return false }
            state.draining = true
            return true
        }
        if start { thread.async { self.drain() } }
    }

    private func drain() {
        while true {
            let batch = state.withLock { state -> [Pending] in
                let batch = state.queue
                state.queue.removeAll(keepingCapacity: true)
                if batch.isEmpty { state.draining = false }
                return batch
            }
            if batch.isEmpty { return }
            var results = [Result<Void, any Error>](repeating: .success(()), count: batch.count)
            do {
                try writer.writeWithoutTransaction { db in
                    try db.inTransaction {
                        // Prepared once per connection: parsing the savepoint SQL for every
                        // unit cost more than most units' own work.
                        let begin = try db.cachedStatement(sql: "SAVEPOINT firegate_unit")
                        let release = try db.cachedStatement(sql: "RELEASE SAVEPOINT firegate_unit")
                        let rollback = try db.cachedStatement(sql: "ROLLBACK TO SAVEPOINT firegate_unit")
                        for (i, pending) in batch.enumerated() {
                            try begin.execute()
                            do {
                                try pending.work(db)
                            } catch {
                                try rollback.execute()
                                results[i] = .failure(error)
                            }
                            try release.execute()
                        }
                        return .commit
                    }
                }
            } catch {
                results = batch.map { _ in .failure(error) }
            }
            for (pending, result) in zip(batch, results) {
                pending.completion(result)
            }
        }
    }
}
