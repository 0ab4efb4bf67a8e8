import FiregateModel
import FiregateStore
import Foundation
import Synchronization

/// The replica's one ordered writer: units queue from any thread and one thread runs every
/// unit waiting at that moment. Consecutive writes (document batches, tree batches) become one
/// commit (`PostgresStore.commit(_:)`), consecutive edge-cache changes one transaction
/// (`applyEdgeChanges`); clears and loads run alone, in their place in the order.
/// Completions are called on that thread, in the order the units were queued.
final class PostgresCommitQueue: Sendable {
    typealias Completion = @Sendable (Result<Void, any Error>) -> Void

    enum Unit: Sendable {
        case documents(DocumentPersistBatch, Completion)
        case tree([TreeStorageBatch], Completion)
        /// Changes to an edge client's cache (`completion` may be nil: nobody waits).
        case edge([EdgeCacheChange], client: String, Completion?)
        /// Work that runs alone, in order (a clear, a load); it reports its own outcome.
        case alone(@Sendable (PostgresStore) -> Void)

        /// Units of one kind that may share a transaction.
        var kind: Int {
            switch self {
            case .documents, .tree: 0
            case .edge: 1
            case .alone: 2
            }
        }

        func fail(_ error: any Error) {
            switch self {
            case .documents(_, let completion), .tree(_, let completion): completion(.failure(error))
            case .edge(_, _, let completion): completion?(.failure(error))
            case .alone: break
            }
        }
    }

    private struct State {
        var pending: [Unit] = []
        var draining = false
        var stopped = false
    }

    private let state = Mutex(State())
    private let thread = DispatchQueue(label: "firegate.postgres.commit")
    private let store = Mutex<WeakStore>(WeakStore())

    private struct WeakStore: @unchecked Sendable { weak var value: PostgresStore? }

    func start(store: PostgresStore) { self.store.withLock { $0.value = store } }

    func stop() { state.withLock { $0.stopped = true } }

    func enqueue(_ unit: Unit) {
        let (start, stopped) = state.withLock { state -> (Bool, Bool) in
            if state.stopped { return (false, true) }
            state.pending.append(unit)
            if state.draining { return (false, false) }
            state.draining = true
            return (true, false)
        }
        if stopped { unit.fail(FiregateError(.unavailable, "The PostgreSQL store is closed.")) }
        if start { thread.async { self.drain() } }
    }

    private func drain() {
        while true {
            let units = state.withLock { state -> [Unit] in
                let units = state.pending
                state.pending.removeAll(keepingCapacity: true)
                if units.isEmpty { state.draining = false }
                return units
            }
            if units.isEmpty { return }
            guard let store = store.withLock({ $0.value }) else {
                for unit in units { unit.fail(FiregateError(.unavailable, "The PostgreSQL store is closed.")) }
                continue
            }
            var index = 0
            while index < units.count {
                if case .alone(let work) = units[index] {
                    work(store)
                    index += 1
                    continue
                }
                let kind = units[index].kind
                var run: [Unit] = []
                while index < units.count, units[index].kind == kind {
                    run.append(units[index])
                    index += 1
                }
                if kind == 0 { store.commit(run) } else { store.applyEdgeChanges(run) }
            }
        }
    }
}
