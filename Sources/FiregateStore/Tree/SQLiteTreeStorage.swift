import FiregateModel
import GRDB

/// `TreeStorage` in the shared SQLite store: table `tree_node (ns, path, value, priority)`,
/// primary key (ns, path). A subtree is the row at its path plus the range
/// `[path + "/", path + "0")` — `0` follows `/` in byte order — so deletes are index ranges.
public final class SQLiteTreeStorage: TreeStorage {
    let store: SQLiteStore

    public init(store: SQLiteStore) {
        self.store = store
    }

    public static let migrations: [StoreMigration] = [
        StoreMigration("tree-v1") { db in
            try db.execute(sql: """
                CREATE TABLE tree_node (
                    ns TEXT NOT NULL,
                    path TEXT NOT NULL,
                    value TEXT,
                    priority TEXT,
                    PRIMARY KEY (ns, path)
                ) WITHOUT ROWID
                """)
        },
    ]

    public func loadRows(namespace: String) throws -> [TreeStorageRow] {
        try store.writer.read { db in
            let cursor = try Row.fetchCursor(db, sql: "SELECT path, value, priority FROM tree_node WHERE ns = ?", arguments: [namespace])
            var rows: [TreeStorageRow] = []
            while let row = try cursor.next() {
                rows.append(TreeStorageRow(path: row[0], value: row[1], priority: row[2]))
            }
            return rows
        }
    }

    public func namespaces() throws -> [String] {
        try store.writer.read { db in try String.fetchAll(db, sql: "SELECT DISTINCT ns FROM tree_node ORDER BY ns") }
    }

    public func commit(_ batches: [TreeStorageBatch]) async throws {
        try await store.committer.commit { db in
            for batch in batches {
                for operation in batch.operations {
                    try SQLiteTreeStorage.apply(operation, namespace: batch.namespace, db: db)
                }
            }
        }
    }

    static func apply(_ operation: TreeStorageOperation, namespace: String, db: Database) throws {
        try apply(operation, table: "tree_node", owner: "ns", key: namespace, db: db)
    }

    /// Applies a row operation to `table`, whose rows belong to `key` in column `owner` (a
    /// namespace here, an edge client for its tree cache) — the same row layout either way.
    static func apply(_ operation: TreeStorageOperation, table: String, owner: String, key: String, db: Database) throws {
        switch operation {
        case .deleteSubtree(let path) where path.isEmpty:
            try db.cachedStatement(sql: "DELETE FROM \(table) WHERE \(owner) = ?").execute(arguments: [key])
        case .deleteSubtree(let path):
            // Two statements: SQLite plans `path = ? OR (path >= ? AND path < ?)` as a scan of
            // every row of the owner, which made a PATCH cost its paths × the namespace's rows.
            try db.cachedStatement(sql: "DELETE FROM \(table) WHERE \(owner) = ? AND path = ?").execute(arguments: [key, path])
            try db.cachedStatement(sql: "DELETE FROM \(table) WHERE \(owner) = ? AND path >= ? AND path < ?")
                .execute(arguments: [key, path + "/", path + "0"])
        case .deleteRow(let path):
            try db.cachedStatement(sql: "DELETE FROM \(table) WHERE \(owner) = ? AND path = ?").execute(arguments: [key, path])
        case .putRow(let row):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO \(table) (\(owner), path, value, priority) VALUES (?, ?, ?, ?)")
                .execute(arguments: [key, row.path, row.value, row.priority])
        }
    }
}
