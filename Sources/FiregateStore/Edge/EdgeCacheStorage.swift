import FiregateModel
import Foundation
import GRDB

/// One persistent edge client's cache on disk: its settings, remote documents, targets and
/// queued mutations. Writes are queued to the group committer and never block the caller.
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
        // LRU garbage collection: sequence numbers on documents, and targets with their keys.
        StoreMigration("edge-v2-lru") { db in
            try db.execute(sql: """
                ALTER TABLE edge_remote_documents ADD COLUMN sequence INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE edge_targets (
                    client_id TEXT NOT NULL, query TEXT NOT NULL, sequence INTEGER NOT NULL, synced INTEGER NOT NULL,
                    documents BLOB NOT NULL, PRIMARY KEY (client_id, query)) WITHOUT ROWID;
                INSERT INTO edge_targets (client_id, query, sequence, synced, documents)
                    SELECT client_id, query, 0, 1, CAST('[]' AS BLOB) FROM edge_synced_queries;
                DROP TABLE edge_synced_queries;
                """)
        },
        StoreMigration("edge-v3-indexes") { db in
            try db.execute(sql: "CREATE TABLE edge_indexes (client_id TEXT PRIMARY KEY NOT NULL, definitions BLOB NOT NULL) WITHOUT ROWID")
        },
        // Per-user mutation queues: the user (uid, "" signed out) who made each queued batch.
        StoreMigration("edge-v5-users") { db in
            try db.execute(sql: "ALTER TABLE edge_mutations ADD COLUMN uid TEXT NOT NULL DEFAULT ''")
        },
        // Watch targets: the SDK's target id, resume token and snapshot version of each target.
        StoreMigration("edge-v6-target-ids") { db in
            try db.execute(sql: """
                ALTER TABLE edge_targets ADD COLUMN target_id INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE edge_targets ADD COLUMN resume_token TEXT NOT NULL DEFAULT '';
                ALTER TABLE edge_targets ADD COLUMN snapshot_us INTEGER NOT NULL DEFAULT 0;
                """)
        },
        // A target's document keys one row each (the SDK's targetDocuments): SQLite rewrites a
        // whole row on any update, so keys held in the target's row made every position update
        // (a commit under a large query) rewrite all of them.
        StoreMigration("edge-v7-target-documents") { db in
            try db.execute(sql: """
                CREATE TABLE edge_target_documents (
                    client_id TEXT NOT NULL, query TEXT NOT NULL, path TEXT NOT NULL,
                    PRIMARY KEY (client_id, query, path)) WITHOUT ROWID
                """)
            let targets = try Row.fetchAll(db, sql: "SELECT client_id, query, documents FROM edge_targets")
            for row in targets {
                let data: Data = row[2]
                for key in try JSONParser.parse(data).arrayValue?.compactMap(\.stringValue) ?? [] {
                    try db.cachedStatement(sql: "INSERT OR IGNORE INTO edge_target_documents (client_id, query, path) VALUES (?, ?, ?)")
                        .execute(arguments: [row[0], row[1], key])
                }
            }
            try db.execute(sql: "ALTER TABLE edge_targets DROP COLUMN documents")
        },
        // Loaded bundles and their named queries (the SDK's bundle cache), one JSON value a client.
        StoreMigration("edge-v8-bundles") { db in
            try db.execute(sql: "CREATE TABLE edge_bundles (client_id TEXT PRIMARY KEY NOT NULL, state BLOB NOT NULL) WITHOUT ROWID")
        },
    ]

    /// A cached remote document: found (with fields) or known missing (at `updateTime`), and
    /// its LRU sequence number.
    public struct StoredDocument: Sendable, Equatable {
        public var path: ResourcePath
        public var found: Bool
        /// A version derived from the client's own acknowledged write, not yet confirmed by watch.
        public var committed: Bool
        public var fields: [String: Value]
        public var createTime: Timestamp
        public var updateTime: Timestamp
        public var sequenceNumber: Int64

        public init(path: ResourcePath, found: Bool, committed: Bool, fields: [String: Value], createTime: Timestamp,
                    updateTime: Timestamp, sequenceNumber: Int64) {
            self.path = path
            self.found = found
            self.committed = committed
            self.fields = fields
            self.createTime = createTime
            self.updateTime = updateTime
            self.sequenceNumber = sequenceNumber
        }
    }

    /// A query's target: its LRU sequence number, whether it has a server result, the
    /// documents of that result, its target id and the resume token of its last snapshot.
    public struct StoredTarget: Sendable, Equatable {
        /// A target's fields without its document keys.
        public struct Position: Sendable {
            public var query: String
            public var sequenceNumber: Int64
            public var synced: Bool
            public var targetID: Int
            public var resumeToken: String
            public var snapshotVersion: Timestamp

            public init(query: String, sequenceNumber: Int64, synced: Bool, targetID: Int, resumeToken: String, snapshotVersion: Timestamp) {
                self.query = query
                self.sequenceNumber = sequenceNumber
                self.synced = synced
                self.targetID = targetID
                self.resumeToken = resumeToken
                self.snapshotVersion = snapshotVersion
            }
        }

        public var query: String
        public var sequenceNumber: Int64
        public var synced: Bool
        public var documents: [ResourcePath]
        public var targetID: Int
        public var resumeToken: String
        public var snapshotVersion: Timestamp

        public init(query: String, sequenceNumber: Int64, synced: Bool, documents: [ResourcePath], targetID: Int = 0, resumeToken: String = "",
                    snapshotVersion: Timestamp = .zero) {
            self.query = query
            self.sequenceNumber = sequenceNumber
            self.synced = synced
            self.documents = documents
            self.targetID = targetID
            self.resumeToken = resumeToken
            self.snapshotVersion = snapshotVersion
        }
    }

    /// Everything persisted for one client.
    public struct Snapshot: Sendable {
        public var settings: JSON
        public var documents: [StoredDocument]
        /// Queued write batches: id, local write time, the writes as a JSON array.
        public var mutations: [(Int64, Timestamp, JSON)]
        /// The user of each batch made while signed in (absent: signed out).
        public var mutationUsers: [Int64: String] = [:]
        public var targets: [StoredTarget]
        /// The local index definitions (an array in the Firebase CLI's format), if any.
        public var indexes: JSON?
        /// The bundle cache (loaded bundles, named queries), if any.
        public var bundles: JSON?

        public init(settings: JSON, documents: [StoredDocument] = [], mutations: [(Int64, Timestamp, JSON)] = [], targets: [StoredTarget] = [],
                    indexes: JSON? = nil) {
            self.settings = settings
            self.documents = documents
            self.mutations = mutations
            self.targets = targets
            self.indexes = indexes
        }
    }

    static func path(_ text: String) -> ResourcePath { ResourcePath(text.split(separator: "/").map(String.init)) }

    /// Everything persisted for this client, or nil if it was never saved.
    public func load() throws -> Snapshot? {
        try store.writer.read { db in
            guard let settingsData = try Data.fetchOne(db, sql: "SELECT settings FROM edge_clients WHERE client_id = ?", arguments: [clientID]) else {
                return nil
            }
            var snapshot = Snapshot(settings: try JSONParser.parse(settingsData))
            let rows = try Row.fetchCursor(db, sql: """
                SELECT path, found, committed, fields, create_us, update_us, sequence FROM edge_remote_documents WHERE client_id = ?
                """, arguments: [clientID])
            while let row = try rows.next() {
                let fieldsData: Data? = row[3]
                let fields = try fieldsData.map { try Value.parseFields(try JSONParser.parse($0)) } ?? [:]
                snapshot.documents.append(StoredDocument(path: EdgeCacheStorage.path(row[0]), found: row[1], committed: row[2], fields: fields,
                                                         createTime: Timestamp(microseconds: row[4]), updateTime: Timestamp(microseconds: row[5]),
                                                         sequenceNumber: row[6]))
            }
            let mutations = try Row.fetchCursor(db, sql: "SELECT batch_id, local_write_us, writes, uid FROM edge_mutations WHERE client_id = ? ORDER BY batch_id", arguments: [clientID])
            while let row = try mutations.next() {
                let data: Data = row[2]
                snapshot.mutations.append((row[0], Timestamp(microseconds: row[1]), try JSONParser.parse(data)))
                let uid: String = row[3]
                if !uid.isEmpty { snapshot.mutationUsers[row[0]] = uid }
            }
            var keys: [String: [ResourcePath]] = [:]
            let keyRows = try Row.fetchCursor(db, sql: "SELECT query, path FROM edge_target_documents WHERE client_id = ?", arguments: [clientID])
            while let row = try keyRows.next() {
                keys[row[0], default: []].append(EdgeCacheStorage.path(row[1]))
            }
            let targets = try Row.fetchCursor(db, sql: "SELECT query, sequence, synced, target_id, resume_token, snapshot_us FROM edge_targets WHERE client_id = ?", arguments: [clientID])
            while let row = try targets.next() {
                let query: String = row[0]
                snapshot.targets.append(StoredTarget(query: query, sequenceNumber: row[1], synced: row[2], documents: keys[query] ?? [], targetID: row[3],
                                                     resumeToken: row[4], snapshotVersion: Timestamp(microseconds: row[5])))
            }
            if let data = try Data.fetchOne(db, sql: "SELECT definitions FROM edge_indexes WHERE client_id = ?", arguments: [clientID]) {
                snapshot.indexes = try? JSONParser.parse(data)
            }
            if let data = try Data.fetchOne(db, sql: "SELECT state FROM edge_bundles WHERE client_id = ?", arguments: [clientID]) {
                snapshot.bundles = try? JSONParser.parse(data)
            }
            return snapshot
        }
    }

    public func saveSettings(_ settings: JSON) {
        let id = clientID, data = Data(JSONWriter.bytes(settings))
        enqueue { db in
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_clients (client_id, settings) VALUES (?, ?)").execute(arguments: [id, data])
        }
    }

    public func saveDocument(_ path: ResourcePath, found: Document?, committed: Bool, version: Timestamp, sequenceNumber: Int64) {
        let id = clientID, key = path.canonical
        let fields = found.map { Data(JSONWriter.bytes(Value.fieldsJSON($0.fields))) }
        let created = found?.createTime.microseconds ?? 0, updated = found?.updateTime.microseconds ?? version.microseconds
        enqueue { db in
            try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO edge_remote_documents (client_id, path, found, committed, fields, create_us, update_us, sequence)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [id, key, found != nil, committed, fields, created, updated, sequenceNumber])
        }
    }

    /// Records when a cached document was last referenced.
    public func saveDocumentSequence(_ path: ResourcePath, _ sequenceNumber: Int64) {
        let id = clientID, key = path.canonical
        enqueue { db in
            try db.cachedStatement(sql: "UPDATE edge_remote_documents SET sequence = ? WHERE client_id = ? AND path = ?").execute(arguments: [sequenceNumber, id, key])
        }
    }

    /// Drops documents from the cache (garbage collection).
    public func deleteDocuments(_ paths: [ResourcePath]) {
        let id = clientID, keys = paths.map(\.canonical)
        enqueue { db in
            for key in keys {
                try db.cachedStatement(sql: "DELETE FROM edge_remote_documents WHERE client_id = ? AND path = ?").execute(arguments: [id, key])
            }
        }
    }

    /// Queues the save of a write batch before returning, so it reaches the disk before any
    /// commit queued later removes it; `onDurable` reports when it is there (a write the app was
    /// told about survives a crash) or that it failed.
    public func saveMutation(id batchID: Int64, localWriteTime: Timestamp, writes: JSON, uid: String = "",
                             onDurable: @escaping GroupCommitter.Completion) {
        let id = clientID, data = Data(JSONWriter.bytes(writes))
        store.committer.enqueue({ db in
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_mutations (client_id, batch_id, local_write_us, writes, uid) VALUES (?, ?, ?, ?, ?)").execute(arguments: [id, batchID, localWriteTime.microseconds, data, uid])
        }, completion: onDurable)
    }

    public func deleteMutation(id batchID: Int64) {
        enqueue(mutationDeletion(id: batchID))
    }

    /// The removal of a queued batch, to run in the transaction of the backend commit that
    /// applies it: a crash then leaves the batch either committed and gone from the queue, or
    /// neither — never sent twice after a restart.
    public func mutationRemoval(id batchID: Int64) -> any CommitCompanion {
        SQLiteCommitCompanion(store: store, work: mutationDeletion(id: batchID))
    }

    func mutationDeletion(id batchID: Int64) -> GroupCommitter.Work {
        let id = clientID
        return { db in
            try db.cachedStatement(sql: "DELETE FROM edge_mutations WHERE client_id = ? AND batch_id = ?").execute(arguments: [id, batchID])
        }
    }

    public func saveTarget(_ target: StoredTarget) {
        let id = clientID
        enqueue { db in try EdgeCacheStorage.insertTarget(target, client: id, db) }
    }

    /// Saves where a stored target stands (its sequence, sync state and resume position) and
    /// the keys that `joined` or `left` its result since it was last saved: the change, not the
    /// whole result. `documents` (all its keys) are written only if the target has no row yet.
    public func saveTargetPosition(_ target: StoredTarget.Position, joined: [ResourcePath] = [], left: [ResourcePath] = [],
                                   documents: @escaping @Sendable () -> [ResourcePath]) {
        let id = clientID
        enqueue { db in
            try db.cachedStatement(sql: "UPDATE edge_targets SET sequence = ?, synced = ?, target_id = ?, resume_token = ?, snapshot_us = ? WHERE client_id = ? AND query = ?")
                .execute(arguments: [target.sequenceNumber, target.synced, target.targetID, target.resumeToken, target.snapshotVersion.microseconds,
                                     id, target.query])
            guard db.changesCount > 0 else {
                try EdgeCacheStorage.insertTarget(StoredTarget(query: target.query, sequenceNumber: target.sequenceNumber, synced: target.synced,
                                                               documents: documents(), targetID: target.targetID, resumeToken: target.resumeToken,
                                                               snapshotVersion: target.snapshotVersion), client: id, db)
                return
            }
            for path in left {
                try db.cachedStatement(sql: "DELETE FROM edge_target_documents WHERE client_id = ? AND query = ? AND path = ?")
                    .execute(arguments: [id, target.query, path.canonical])
            }
            for path in joined {
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO edge_target_documents (client_id, query, path) VALUES (?, ?, ?)")
                    .execute(arguments: [id, target.query, path.canonical])
            }
        }
    }

    /// Writes a target and exactly its keys, replacing what was stored for its query.
    static func insertTarget(_ target: StoredTarget, client id: String, _ db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_targets (client_id, query, sequence, synced, target_id, resume_token, snapshot_us) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .execute(arguments: [id, target.query, target.sequenceNumber, target.synced, target.targetID, target.resumeToken, target.snapshotVersion.microseconds])
        try db.cachedStatement(sql: "DELETE FROM edge_target_documents WHERE client_id = ? AND query = ?").execute(arguments: [id, target.query])
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO edge_target_documents (client_id, query, path) VALUES (?, ?, ?)")
        for path in target.documents { try insert.execute(arguments: [id, target.query, path.canonical]) }
    }

    /// Saves the local index definitions (replacing earlier ones).
    public func saveIndexes(_ definitions: JSON) {
        let id = clientID, data = Data(JSONWriter.bytes(definitions))
        enqueue { db in
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_indexes (client_id, definitions) VALUES (?, ?)").execute(arguments: [id, data])
        }
    }

    /// Saves the bundle cache (replacing the earlier one).
    public func saveBundles(_ state: JSON) {
        let id = clientID, data = Data(JSONWriter.bytes(state))
        enqueue { db in
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_bundles (client_id, state) VALUES (?, ?)").execute(arguments: [id, data])
        }
    }

    public func deleteTargets(_ queries: [String]) {
        let id = clientID
        enqueue { db in
            for query in queries {
                try db.cachedStatement(sql: "DELETE FROM edge_targets WHERE client_id = ? AND query = ?").execute(arguments: [id, query])
                try db.cachedStatement(sql: "DELETE FROM edge_target_documents WHERE client_id = ? AND query = ?").execute(arguments: [id, query])
            }
        }
    }

    /// Removes the cache and the queue (clearPersistence); `settings` too when deleting the client.
    public func clear(includingSettings: Bool) {
        let id = clientID
        enqueue { db in
            try db.cachedStatement(sql: "DELETE FROM edge_remote_documents WHERE client_id = ?").execute(arguments: [id])
            try db.cachedStatement(sql: "DELETE FROM edge_mutations WHERE client_id = ?").execute(arguments: [id])
            try db.cachedStatement(sql: "DELETE FROM edge_targets WHERE client_id = ?").execute(arguments: [id])
            try db.cachedStatement(sql: "DELETE FROM edge_target_documents WHERE client_id = ?").execute(arguments: [id])
            try db.cachedStatement(sql: "DELETE FROM edge_indexes WHERE client_id = ?").execute(arguments: [id])
            try db.cachedStatement(sql: "DELETE FROM edge_bundles WHERE client_id = ?").execute(arguments: [id])
            if includingSettings { try db.cachedStatement(sql: "DELETE FROM edge_clients WHERE client_id = ?").execute(arguments: [id]) }
        }
    }

    /// Replaces everything stored for this client with `snapshot` (an imported client), durably.
    public func save(_ snapshot: Snapshot) async throws {
        let id = clientID
        try await store.committer.commit { db in
            for table in ["edge_remote_documents", "edge_mutations", "edge_targets", "edge_target_documents", "edge_indexes", "edge_bundles", "edge_clients"] {
                try db.execute(sql: "DELETE FROM \(table) WHERE client_id = ?", arguments: [id])
            }
            try db.cachedStatement(sql: "INSERT INTO edge_clients (client_id, settings) VALUES (?, ?)").execute(arguments: [id, Data(JSONWriter.bytes(snapshot.settings))])
            for doc in snapshot.documents {
                try db.execute(sql: """
                    INSERT INTO edge_remote_documents (client_id, path, found, committed, fields, create_us, update_us, sequence)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [id, doc.path.canonical, doc.found, doc.committed, doc.found ? Data(JSONWriter.bytes(Value.fieldsJSON(doc.fields))) : nil,
                                    doc.found ? doc.createTime.microseconds : 0, doc.updateTime.microseconds, doc.sequenceNumber])
            }
            for (batchID, time, writes) in snapshot.mutations {
                try db.cachedStatement(sql: "INSERT INTO edge_mutations (client_id, batch_id, local_write_us, writes, uid) VALUES (?, ?, ?, ?, ?)").execute(arguments: [id, batchID, time.microseconds, Data(JSONWriter.bytes(writes)), snapshot.mutationUsers[batchID] ?? ""])
            }
            if let indexes = snapshot.indexes {
                try db.cachedStatement(sql: "INSERT INTO edge_indexes (client_id, definitions) VALUES (?, ?)").execute(arguments: [id, Data(JSONWriter.bytes(indexes))])
            }
            if let bundles = snapshot.bundles {
                try db.cachedStatement(sql: "INSERT INTO edge_bundles (client_id, state) VALUES (?, ?)").execute(arguments: [id, Data(JSONWriter.bytes(bundles))])
            }
            for target in snapshot.targets { try EdgeCacheStorage.insertTarget(target, client: id, db) }
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
