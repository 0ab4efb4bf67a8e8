import FiregateModel
import FiregateStore
import PostgresNIO

/// `TreeStorage` in PostgreSQL: `fg_tree_rows` under the namespace's scope, the same row layout
/// as SQLite's `tree_node`, written by the store's fenced commit.
public struct PostgresTreeStorage: TreeStorage {
    let store: PostgresStore

    public init(store: PostgresStore) {
        self.store = store
    }

    public func writeRefusal(namespace: String) -> FiregateError? {
        store.writeRefusal(.tree(namespace: namespace))
    }

    public func loadRows(namespace: String) throws -> [TreeStorageRow] {
        let scope = PostgresStore.scope(namespace: namespace)
        return try store.read { session throws(FiregateError) -> [TreeStorageRow] in
            let head = try session.query("SELECT seq, generation FROM fg_heads WHERE scope = \(scope)").rows.first
            let position = try? head?.decode((Int64, String).self)
            store.leases.loaded(scope, seq: position?.0 ?? 0, generation: position?.1)
            var rows: [TreeStorageRow] = []
            for row in try session.query("SELECT path, value, priority FROM fg_tree_rows WHERE scope = \(scope)").rows {
                let (path, value, priority) = try decode(row, (String, String?, String?).self)
                rows.append(TreeStorageRow(path: PostgresText.loaded(path), value: value, priority: priority))
            }
            return rows
        }
    }

    public func namespaces() throws -> [String] {
        try store.read { session throws(FiregateError) -> [String] in
            var names: [String] = []
            for row in try session.query("SELECT DISTINCT scope FROM fg_tree_rows WHERE scope LIKE 't:%' ORDER BY scope").rows {
                names.append(String(PostgresText.loaded(try decode(row, String.self)).dropFirst(2)))
            }
            return names
        }
    }

    public func follow(_ apply: @escaping @Sendable (String, JSON) -> Void) {
        store.tail.follow(tree: apply)
    }

    public func commit(_ batches: [TreeStorageBatch]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            store.queue.enqueue(.tree(batches) { continuation.resume(with: $0) })
        }
    }
}
