import FiregateModel
import Foundation
import GRDB

extension TreeCacheStorage {
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

}

/// The edge clients' tree caches in the shared SQLite store.
extension SQLiteStore {
    public func loadTreeCache(client: String) throws -> TreeCacheStorage.Snapshot {
        try writer.read { db in
            var snapshot = TreeCacheStorage.Snapshot()
            let rows = try Row.fetchCursor(db, sql: "SELECT path, value, priority FROM edge_tree_cache WHERE client_id = ?", arguments: [client])
            while let row = try rows.next() { snapshot.rows.append(TreeStorageRow(path: row[0], value: row[1], priority: row[2])) }
            let queries = try Row.fetchCursor(db, sql: """
                SELECT id, path, parameters, last_use, complete, active, keys FROM edge_tree_queries WHERE client_id = ?
                """, arguments: [client])
            while let row = try queries.next() {
                let data: Data = row[6]
                let keys = (try? JSONParser.parse(data))?.arrayValue?.compactMap(\.stringValue) ?? []
                snapshot.queries.append(TreeCacheStorage.StoredQuery(id: row[0], path: row[1], parameters: row[2], lastUse: row[3], complete: row[4], active: row[5], keys: keys))
            }
            let writes = try Row.fetchCursor(db, sql: "SELECT body FROM edge_tree_writes WHERE client_id = ? ORDER BY write_id", arguments: [client])
            while let row = try writes.next() {
                let data: Data = row[0]
                if let json = try? JSONParser.parse(data) { snapshot.writes.append(json) }
            }
            if let data = try Data.fetchOne(db, sql: "SELECT body FROM edge_auth WHERE client_id = ?", arguments: [client]) {
                snapshot.auth = try? JSONParser.parse(data)
            }
            return snapshot
        }
    }

    static func applyTree(_ change: EdgeCacheChange, client id: String, _ db: Database) throws {
        switch change {
        case .treeCache(let operations):
            for operation in operations {
                try SQLiteTreeStorage.apply(operation, table: "edge_tree_cache", owner: "client_id", key: id, db: db)
            }
        case .treeQuery(let query):
            try db.execute(sql: """
                INSERT OR REPLACE INTO edge_tree_queries (client_id, id, path, parameters, last_use, complete, active, keys)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, query.id, query.path, query.parameters, query.lastUse, query.complete, query.active, Data(TreeCacheStorage.keysJSON(query.keys))])
        case .deleteTreeQueries(let ids):
            for queryID in ids { try db.cachedStatement(sql: "DELETE FROM edge_tree_queries WHERE client_id = ? AND id = ?").execute(arguments: [id, queryID]) }
        case .treeWrite(let writeID, let body):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_tree_writes (client_id, write_id, body) VALUES (?, ?, ?)").execute(arguments: [id, writeID, Data(body)])
        case .deleteTreeWrite(let writeID):
            try db.cachedStatement(sql: "DELETE FROM edge_tree_writes WHERE client_id = ? AND write_id = ?").execute(arguments: [id, writeID])
        case .auth(let body):
            if let body {
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_auth (client_id, body) VALUES (?, ?)").execute(arguments: [id, Data(body)])
            } else {
                try db.cachedStatement(sql: "DELETE FROM edge_auth WHERE client_id = ?").execute(arguments: [id])
            }
        case .clearTree(let includingAuth):
            for table in ["edge_tree_cache", "edge_tree_queries", "edge_tree_writes"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE client_id = ?", arguments: [id])
            }
            if includingAuth { try db.cachedStatement(sql: "DELETE FROM edge_auth WHERE client_id = ?").execute(arguments: [id]) }
        default:
            try apply(change, client: id, db)
        }
    }

    public func replace(client id: String, tree snapshot: TreeCacheStorage.Snapshot) async throws {
        try await committer.commit { db in
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
                                     Data(TreeCacheStorage.keysJSON(query.keys))])
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

}
