import FiregateModel
import Foundation
import GRDB

/// The edge clients' caches in the shared SQLite store: one set of tables keyed by client id,
/// written through the group committer with the backend's own commits.
extension EdgeCacheStorage {
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

}

extension SQLiteStore: EdgeCacheStore {
    public func loadEdgeCache(client: String) throws -> EdgeCacheStorage.Snapshot? {
        try writer.read { db in
            guard let settingsData = try Data.fetchOne(db, sql: "SELECT settings FROM edge_clients WHERE client_id = ?", arguments: [client]) else {
                return nil
            }
            var snapshot = EdgeCacheStorage.Snapshot(settings: try JSONParser.parse(settingsData))
            let rows = try Row.fetchCursor(db, sql: """
                SELECT path, found, committed, fields, create_us, update_us, sequence FROM edge_remote_documents WHERE client_id = ?
                """, arguments: [client])
            while let row = try rows.next() {
                let fieldsData: Data? = row[3]
                let fields = try fieldsData.map { try Value.parseFields(try JSONParser.parse($0)) } ?? [:]
                snapshot.documents.append(EdgeCacheStorage.StoredDocument(path: EdgeCacheStorage.path(row[0]), found: row[1], committed: row[2], fields: fields,
                                                         createTime: Timestamp(microseconds: row[4]), updateTime: Timestamp(microseconds: row[5]),
                                                         sequenceNumber: row[6]))
            }
            let mutations = try Row.fetchCursor(db, sql: "SELECT batch_id, local_write_us, writes, uid FROM edge_mutations WHERE client_id = ? ORDER BY batch_id", arguments: [client])
            while let row = try mutations.next() {
                let data: Data = row[2]
                snapshot.mutations.append((row[0], Timestamp(microseconds: row[1]), try JSONParser.parse(data)))
                let uid: String = row[3]
                if !uid.isEmpty { snapshot.mutationUsers[row[0]] = uid }
            }
            var keys: [String: [ResourcePath]] = [:]
            let keyRows = try Row.fetchCursor(db, sql: "SELECT query, path FROM edge_target_documents WHERE client_id = ?", arguments: [client])
            while let row = try keyRows.next() {
                keys[row[0], default: []].append(EdgeCacheStorage.path(row[1]))
            }
            let targets = try Row.fetchCursor(db, sql: "SELECT query, sequence, synced, target_id, resume_token, snapshot_us FROM edge_targets WHERE client_id = ?", arguments: [client])
            while let row = try targets.next() {
                let query: String = row[0]
                snapshot.targets.append(EdgeCacheStorage.StoredTarget(query: query, sequenceNumber: row[1], synced: row[2], documents: keys[query] ?? [], targetID: row[3],
                                                     resumeToken: row[4], snapshotVersion: Timestamp(microseconds: row[5])))
            }
            if let data = try Data.fetchOne(db, sql: "SELECT definitions FROM edge_indexes WHERE client_id = ?", arguments: [client]) {
                snapshot.indexes = try? JSONParser.parse(data)
            }
            if let data = try Data.fetchOne(db, sql: "SELECT state FROM edge_bundles WHERE client_id = ?", arguments: [client]) {
                snapshot.bundles = try? JSONParser.parse(data)
            }
            return snapshot
        }
    }

    public func enqueue(_ changes: [EdgeCacheChange], client: String, onDurable: (@Sendable (Result<Void, any Error>) -> Void)?) {
        committer.enqueue({ db in
            for change in changes { try SQLiteStore.apply(change, client: client, db) }
        }, completion: onDurable ?? { _ in })
    }

    public func flush() async throws {
        try await committer.commit { _ in }
    }

    public func mutationRemoval(client: String, batchID: Int64) -> any CommitCompanion {
        SQLiteCommitCompanion(store: self, work: { db in try SQLiteStore.apply(.deleteMutation(batchID: batchID), client: client, db) })
    }

    public func replace(client id: String, edge snapshot: EdgeCacheStorage.Snapshot) async throws {
        try await committer.commit { db in
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
            for target in snapshot.targets { try SQLiteStore.insertTarget(target, client: id, db) }
        }
    }

    /// Applies one change for client `id` (the tree side's changes: `applyTree`).
    static func apply(_ change: EdgeCacheChange, client id: String, _ db: Database) throws {
        switch change {
        case .settings(let json):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_clients (client_id, settings) VALUES (?, ?)").execute(arguments: [id, Data(json)])
        case .document(let path, let found, let committed, let fields, let created, let updated, let sequence):
            try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO edge_remote_documents (client_id, path, found, committed, fields, create_us, update_us, sequence)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [id, path, found, committed, fields.map { Data($0) }, created, updated, sequence])
        case .documentSequence(let path, let sequence):
            try db.cachedStatement(sql: "UPDATE edge_remote_documents SET sequence = ? WHERE client_id = ? AND path = ?").execute(arguments: [sequence, id, path])
        case .deleteDocuments(let paths):
            for path in paths {
                try db.cachedStatement(sql: "DELETE FROM edge_remote_documents WHERE client_id = ? AND path = ?").execute(arguments: [id, path])
            }
        case .mutation(let batchID, let localWriteUs, let writes, let uid):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_mutations (client_id, batch_id, local_write_us, writes, uid) VALUES (?, ?, ?, ?, ?)")
                .execute(arguments: [id, batchID, localWriteUs, Data(writes), uid])
        case .deleteMutation(let batchID):
            try db.cachedStatement(sql: "DELETE FROM edge_mutations WHERE client_id = ? AND batch_id = ?").execute(arguments: [id, batchID])
        case .target(let target):
            try insertTarget(target, client: id, db)
        case .targetPosition(let target, let joined, let left, let documents):
            try db.cachedStatement(sql: "UPDATE edge_targets SET sequence = ?, synced = ?, target_id = ?, resume_token = ?, snapshot_us = ? WHERE client_id = ? AND query = ?")
                .execute(arguments: [target.sequenceNumber, target.synced, target.targetID, target.resumeToken, target.snapshotVersion.microseconds,
                                     id, target.query])
            guard db.changesCount > 0 else {
                try insertTarget(EdgeCacheStorage.StoredTarget(query: target.query, sequenceNumber: target.sequenceNumber, synced: target.synced,
                                                               documents: documents(), targetID: target.targetID, resumeToken: target.resumeToken,
                                                               snapshotVersion: target.snapshotVersion), client: id, db)
                return
            }
            for path in left {
                try db.cachedStatement(sql: "DELETE FROM edge_target_documents WHERE client_id = ? AND query = ? AND path = ?")
                    .execute(arguments: [id, target.query, path])
            }
            for path in joined {
                try db.cachedStatement(sql: "INSERT OR IGNORE INTO edge_target_documents (client_id, query, path) VALUES (?, ?, ?)")
                    .execute(arguments: [id, target.query, path])
            }
        case .indexes(let json):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_indexes (client_id, definitions) VALUES (?, ?)").execute(arguments: [id, Data(json)])
        case .bundles(let json):
            try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_bundles (client_id, state) VALUES (?, ?)").execute(arguments: [id, Data(json)])
        case .deleteTargets(let queries):
            for query in queries {
                try db.cachedStatement(sql: "DELETE FROM edge_targets WHERE client_id = ? AND query = ?").execute(arguments: [id, query])
                try db.cachedStatement(sql: "DELETE FROM edge_target_documents WHERE client_id = ? AND query = ?").execute(arguments: [id, query])
            }
        case .clear(let includingSettings):
            for table in ["edge_remote_documents", "edge_mutations", "edge_targets", "edge_target_documents", "edge_indexes", "edge_bundles"] {
                try db.cachedStatement(sql: "DELETE FROM \(table) WHERE client_id = ?").execute(arguments: [id])
            }
            if includingSettings { try db.cachedStatement(sql: "DELETE FROM edge_clients WHERE client_id = ?").execute(arguments: [id]) }
        case .treeCache, .treeQuery, .deleteTreeQueries, .treeWrite, .deleteTreeWrite, .auth, .clearTree:
            try applyTree(change, client: id, db)
        }
    }

    /// Writes a target and exactly its keys, replacing what was stored for its query.
    static func insertTarget(_ target: EdgeCacheStorage.StoredTarget, client id: String, _ db: Database) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO edge_targets (client_id, query, sequence, synced, target_id, resume_token, snapshot_us) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .execute(arguments: [id, target.query, target.sequenceNumber, target.synced, target.targetID, target.resumeToken, target.snapshotVersion.microseconds])
        try db.cachedStatement(sql: "DELETE FROM edge_target_documents WHERE client_id = ? AND query = ?").execute(arguments: [id, target.query])
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO edge_target_documents (client_id, query, path) VALUES (?, ?, ?)")
        for path in target.documents { try insert.execute(arguments: [id, target.query, path.canonical]) }
    }
}
