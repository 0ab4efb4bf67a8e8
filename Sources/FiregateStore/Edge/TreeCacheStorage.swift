import FiregateModel
import Foundation
import GRDB

/// One persistent edge client's tree cache on disk, as the SDK's LevelDB persistence keeps
/// it: server-cache rows (the backend's row encoding), tracked queries, and the queue of
/// unacknowledged writes stored unresolved. Cache writes go to the group committer without
/// blocking; a queued write is durable before the app is told about it.
public struct TreeCacheStorage: Sendable {
    let store: SQLiteStore
    let clientID: String

    public init(store: SQLiteStore, clientID: String) {
        self.store = store
        self.clientID = clientID
    }

    public static let migrations: [StoreMigration] = [
        StoreMigration("edge-v4-tree") { db in
            try db.execute(sql: """
                CREATE TABLE edge_tree_cache (
                    client_id TEXT NOT NULL, path TEXT NOT NULL, value TEXT, priority TEXT,
                    PRIMARY KEY (client_id, path)) WITHOUT ROWID;
                CREATE TABLE edge_tree_queries (
                    client_id TEXT NOT NULL, id INTEGER NOT NULL, path TEXT NOT NULL, parameters TEXT NOT NULL,
                    last_use INTEGER NOT NULL, complete INTEGER NOT NULL, active INTEGER NOT NULL, keys BLOB NOT NULL,
                    PRIMARY KEY (client_id, id)) WITHOUT ROWID;
                CREATE TABLE edge_tree_writes (
                    client_id TEXT NOT NULL, write_id INTEGER NOT NULL, body BLOB NOT NULL,
                    PRIMARY KEY (client_id, write_id)) WITHOUT ROWID;
                CREATE TABLE edge_auth (client_id TEXT PRIMARY KEY NOT NULL, body BLOB NOT NULL) WITHOUT ROWID;
                """)
        },
    ]

    /// A tracked query as stored.
    public struct StoredQuery: Sendable, Equatable {
        public var id: Int64
        public var path: String
        public var parameters: String
        public var lastUse: Int64
        public var complete: Bool
        public var active: Bool
        public var keys: [String]

        public init(id: Int64, path: String, parameters: String, lastUse: Int64, complete: Bool, active: Bool, keys: [String]) {
            self.id = id
            self.path = path
            self.parameters = parameters
            self.lastUse = lastUse
            self.complete = complete
            self.active = active
            self.keys = keys
        }
    }

    /// Everything stored for one client's tree.
    public struct Snapshot: Sendable {
        public init() {}

        public var rows: [TreeStorageRow] = []
        public var queries: [StoredQuery] = []
        /// Queued writes in id order, as stored.
        public var writes: [JSON] = []
        public var auth: JSON?

        public var isEmpty: Bool { rows.isEmpty && queries.isEmpty && writes.isEmpty && auth == nil }
    }

    public func load() throws -> Snapshot {
        try store.writer.read { db in
            var snapshot = Snapshot()
            let rows = try Row.fetchCursor(db, sql: "SELECT path, value, priority FROM edge_tree_cache WHERE client_id = ?", arguments: [clientID])
            while let row = try rows.next() { snapshot.rows.append(TreeStorageRow(path: row[0], value: row[1], priority: row[2])) }
            let queries = try Row.fetchCursor(db, sql: """
                SELECT id, path, parameters, last_use, complete, active, keys FROM edge_tree_queries WHERE client_id = ?
                """, arguments: [clientID])
            while let row = try queries.next() {
                let data: Data = row[6]
                let keys = (try? JSONParser.parse(data))?.arrayValue?.compactMap(\.stringValue) ?? []
                snapshot.queries.append(StoredQuery(id: row[0], path: row[1], parameters: row[2], lastUse: row[3], complete: row[4], active: row[5], keys: keys))
            }
            let writes = try Row.fetchCursor(db, sql: "SELECT body FROM edge_tree_writes WHERE client_id = ? ORDER BY write_id", arguments: [clientID])
            while let row = try writes.next() {
                let data: Data = row[0]
                if let json = try? JSONParser.parse(data) { snapshot.writes.append(json) }
            }
            if let data = try Data.fetchOne(db, sql: "SELECT body FROM edge_auth WHERE client_id = ?", arguments: [clientID]) {
                snapshot.auth = try? JSONParser.parse(data)
            }
            return snapshot
        }
    }

    /// Applies server-cache row changes (in order, not waiting).
    public func applyCache(_ operations: [TreeStorageOperation]) {
        guard !operations.isEmpty else { return }
        let id = clientID
        enqueue { db in
            for operation in operations {
                try SQLiteTreeStorage.apply(operation, table: "edge_tree_cache", owner: "client_id", key: id, db: db)
            }
        }
    }

    public func saveQuery(_ query: StoredQuery) {
        let id = clientID, keys = Data(JSONWriter.bytes(.array(query.keys.sorted().map { .string($0) })))
        enqueue { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO edge_tree_queries (client_id, id, path, parameters, last_use, complete, active, keys)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, query.id, query.path, query.parameters, query.lastUse, query.complete, query.active, keys])
        }
    }

    public func deleteQueries(_ ids: [Int64]) {
        let id = clientID
        enqueue { db in
            for queryID in ids { try db.cachedStatement(sql: "DELETE FROM edge_tree_queries WHERE client_id = ? AND id = ?").execute(arguments: [id, queryID]) }
        }
    }

    /// Stores a queued write and returns once it is durable.
    public func saveWrite(id writeID: Int64, body: JSON) async throws {
        let id = clientID, data = Data(JSONWriter.bytes(body))
        try await store.committer.commit { db in
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_tree_writes (client_id, write_id, body) VALUES (?, ?, ?)").execute(arguments: [id, writeID, data])
        }
    }

    public func deleteWrite(id writeID: Int64) {
        let id = clientID
        enqueue { db in
            try db.cachedStatement(sql: "DELETE FROM edge_tree_writes WHERE client_id = ? AND write_id = ?").execute(arguments: [id, writeID])
        }
    }

    public func saveAuth(_ body: JSON?) {
        let id = clientID, data = body.map { Data(JSONWriter.bytes($0)) }
        enqueue { db in
            if let data {
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_auth (client_id, body) VALUES (?, ?)").execute(arguments: [id, data])
            } else {
                try db.cachedStatement(sql: "DELETE FROM edge_auth WHERE client_id = ?").execute(arguments: [id])
            }
        }
    }

    /// Removes the tree cache and queue; the auth record too when deleting the client.
    public func clear(includingAuth: Bool) {
        let id = clientID
        enqueue { db in
            for table in ["edge_tree_cache", "edge_tree_queries", "edge_tree_writes"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE client_id = ?", arguments: [id])
            }
            if includingAuth { try db.cachedStatement(sql: "DELETE FROM edge_auth WHERE client_id = ?").execute(arguments: [id]) }
        }
    }

    /// Replaces everything stored for this client's tree with `snapshot` (an imported
    /// client), durably.
    public func save(_ snapshot: Snapshot) async throws {
        let id = clientID
        try await store.committer.commit { db in
            for table in ["edge_tree_cache", "edge_tree_queries", "edge_tree_writes", "edge_auth"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE client_id = ?", arguments: [id])
            }
            for row in snapshot.rows {
                try SQLiteTreeStorage.apply(.putRow(row), table: "edge_tree_cache", owner: "client_id", key: id, db: db)
            }
            for query in snapshot.queries {
                try db.execute(sql: """
                    INSERT INTO edge_tree_queries (client_id, id, path, parameters, last_use, complete, active, keys) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [id, query.id, query.path, query.parameters, query.lastUse, query.complete, query.active,
                                     Data(JSONWriter.bytes(.array(query.keys.sorted().map { .string($0) })))])
            }
            for body in snapshot.writes {
                guard let writeID = body["id"]?.integerLike else { continue }
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_tree_writes (client_id, write_id, body) VALUES (?, ?, ?)").execute(arguments: [id, writeID, Data(JSONWriter.bytes(body))])
            }
            if let auth = snapshot.auth {
                try db.cachedStatement(sql: "INSERT INTO edge_auth (client_id, body) VALUES (?, ?)").execute(arguments: [id, Data(JSONWriter.bytes(auth))])
            }
        }
    }

    func enqueue(_ work: @escaping GroupCommitter.Work) {
        store.committer.enqueue(work) { _ in }
    }
}
