import FiregateModel
import Foundation
import GRDB

/// One persistent edge client's cache on disk: its settings, remote documents and queued
/// mutations. Writes are queued to the group committer and never block the caller.
public struct EdgeCacheStorage: Sendable {
    let store: SQLiteStore
    let clientID: String

    public init(store: SQLiteStore, clientID: String) {
        self.store = store
        self.clientID = clientID
    }

    public static let migrations: [StoreMigration] = [
        StoreMigration("edge-v1") { db in
            try db.execute(sql: """
                CREATE TABLE edge_clients (client_id TEXT PRIMARY KEY NOT NULL, settings BLOB NOT NULL);
                CREATE TABLE edge_remote_documents (
                    client_id TEXT NOT NULL, path TEXT NOT NULL, found INTEGER NOT NULL, committed INTEGER NOT NULL,
                    fields BLOB, create_us INTEGER NOT NULL, update_us INTEGER NOT NULL,
                    PRIMARY KEY (client_id, path)) WITHOUT ROWID;
                CREATE TABLE edge_mutations (
                    client_id TEXT NOT NULL, batch_id INTEGER NOT NULL, local_write_us INTEGER NOT NULL, writes BLOB NOT NULL,
                    PRIMARY KEY (client_id, batch_id)) WITHOUT ROWID;
                CREATE TABLE edge_synced_queries (client_id TEXT NOT NULL, query TEXT NOT NULL, PRIMARY KEY (client_id, query)) WITHOUT ROWID;
                """)
        },
    ]

    /// Everything persisted for this client, or nil if it was never saved.
    public struct Snapshot: Sendable {
        public var settings: JSON
        public var documents: [(ResourcePath, Bool, Bool, [String: Value], Timestamp, Timestamp)]
        public var mutations: [(Int64, Timestamp, JSON)]
        public var syncedQueries: [String]

        public init(settings: JSON, documents: [(ResourcePath, Bool, Bool, [String: Value], Timestamp, Timestamp)] = [],
                    mutations: [(Int64, Timestamp, JSON)] = [], syncedQueries: [String] = []) {
            self.settings = settings
            self.documents = documents
            self.mutations = mutations
            self.syncedQueries = syncedQueries
        }
    }

    public func load() throws -> Snapshot? {
        try store.writer.read { db in
            guard let settingsData = try Data.fetchOne(db, sql: "SELECT settings FROM edge_clients WHERE client_id = ?", arguments: [clientID]) else {
                return nil
            }
            var snapshot = Snapshot(settings: try JSONParser.parse(settingsData), documents: [], mutations: [], syncedQueries: [])
            let rows = try Row.fetchCursor(db, sql: "SELECT path, found, committed, fields, create_us, update_us FROM edge_remote_documents WHERE client_id = ?", arguments: [clientID])
            while let row = try rows.next() {
                let path = ResourcePath((row[0] as String).split(separator: "/").map(String.init))
                let fieldsData: Data? = row[3]
                let fields = try fieldsData.map { try Value.parseFields(try JSONParser.parse($0)) } ?? [:]
                snapshot.documents.append((path, row[1], row[2], fields, Timestamp(microseconds: row[4]), Timestamp(microseconds: row[5])))
            }
            let mutations = try Row.fetchCursor(db, sql: "SELECT batch_id, local_write_us, writes FROM edge_mutations WHERE client_id = ? ORDER BY batch_id", arguments: [clientID])
            while let row = try mutations.next() {
                let data: Data = row[2]
                snapshot.mutations.append((row[0], Timestamp(microseconds: row[1]), try JSONParser.parse(data)))
            }
            snapshot.syncedQueries = try String.fetchAll(db, sql: "SELECT query FROM edge_synced_queries WHERE client_id = ?", arguments: [clientID])
            return snapshot
        }
    }

    public func saveSettings(_ settings: JSON) {
        let id = clientID, data = Data(JSONWriter.bytes(settings))
        enqueue { db in
            try db.execute(sql: "INSERT OR REPLACE INTO edge_clients (client_id, settings) VALUES (?, ?)", arguments: [id, data])
        }
    }

    public func saveDocument(_ path: ResourcePath, found: Document?, committed: Bool, version: Timestamp) {
        let id = clientID, key = path.canonical
        let fields = found.map { Data(JSONWriter.bytes(Value.fieldsJSON($0.fields))) }
        let created = found?.createTime.microseconds ?? 0, updated = found?.updateTime.microseconds ?? version.microseconds
        enqueue { db in
            try db.execute(sql: """
                INSERT OR REPLACE INTO edge_remote_documents (client_id, path, found, committed, fields, create_us, update_us)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """, arguments: [id, key, found != nil, committed, fields, created, updated])
        }
    }

    /// Saves a queued write and returns once it is durable: a write the app was told about
    /// survives a crash.
    public func saveMutation(id batchID: Int64, localWriteTime: Timestamp, writes: JSON) async throws {
        let id = clientID, data = Data(JSONWriter.bytes(writes))
        try await store.committer.commit { db in
            try db.execute(sql: "INSERT OR REPLACE INTO edge_mutations (client_id, batch_id, local_write_us, writes) VALUES (?, ?, ?, ?)",
                           arguments: [id, batchID, localWriteTime.microseconds, data])
        }
    }

    public func deleteMutation(id batchID: Int64) {
        let id = clientID
        enqueue { db in
            try db.execute(sql: "DELETE FROM edge_mutations WHERE client_id = ? AND batch_id = ?", arguments: [id, batchID])
        }
    }

    public func saveSyncedQuery(_ canonical: String) {
        let id = clientID
        enqueue { db in
            try db.execute(sql: "INSERT OR IGNORE INTO edge_synced_queries (client_id, query) VALUES (?, ?)", arguments: [id, canonical])
        }
    }

    /// Removes the cache and the queue (clearPersistence); `settings` too when deleting the client.
    public func clear(includingSettings: Bool) {
        let id = clientID
        enqueue { db in
            try db.execute(sql: "DELETE FROM edge_remote_documents WHERE client_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM edge_mutations WHERE client_id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM edge_synced_queries WHERE client_id = ?", arguments: [id])
            if includingSettings { try db.execute(sql: "DELETE FROM edge_clients WHERE client_id = ?", arguments: [id]) }
        }
    }

    /// Replaces everything stored for this client with `snapshot` (an imported client), durably.
    public func save(_ snapshot: Snapshot) async throws {
        let id = clientID
        try await store.committer.commit { db in
            for table in ["edge_remote_documents", "edge_mutations", "edge_synced_queries", "edge_clients"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE client_id = ?", arguments: [id])
            }
            try db.execute(sql: "INSERT INTO edge_clients (client_id, settings) VALUES (?, ?)",
                           arguments: [id, Data(JSONWriter.bytes(snapshot.settings))])
            for (path, found, committed, fields, created, updated) in snapshot.documents {
                try db.execute(sql: """
                    INSERT INTO edge_remote_documents (client_id, path, found, committed, fields, create_us, update_us)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [id, path.canonical, found, committed, found ? Data(JSONWriter.bytes(Value.fieldsJSON(fields))) : nil,
                                    found ? created.microseconds : 0, updated.microseconds])
            }
            for (batchID, time, writes) in snapshot.mutations {
                try db.execute(sql: "INSERT INTO edge_mutations (client_id, batch_id, local_write_us, writes) VALUES (?, ?, ?, ?)",
                               arguments: [id, batchID, time.microseconds, Data(JSONWriter.bytes(writes))])
            }
            for query in snapshot.syncedQueries {
                try db.execute(sql: "INSERT OR IGNORE INTO edge_synced_queries (client_id, query) VALUES (?, ?)", arguments: [id, query])
            }
        }
    }

    /// Waits until everything queued so far is on disk.
    public func flush() async throws {
        try await store.committer.commit { _ in }
    }

    func enqueue(_ work: @escaping GroupCommitter.Work) {
        store.committer.enqueue(work) { _ in }
    }
}
