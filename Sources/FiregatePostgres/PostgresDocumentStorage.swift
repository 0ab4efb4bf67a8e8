import FiregateModel
import FiregateStore
import Foundation
import PostgresNIO

/// `DocumentStorage` in PostgreSQL: rows of `fg_documents` under the database's scope, written
/// by the store's fenced commit (one statement per run of batches, with the log rows).
public struct PostgresDocumentStorage: DocumentStorage {
    let store: PostgresStore

    public init(store: PostgresStore) {
        self.store = store
    }

    public func loadAll() throws -> [(DatabaseID, Document)] {
        try store.read { session throws(FiregateError) -> [(DatabaseID, Document)] in
            for row in try session.query("SELECT scope, seq, generation FROM fg_heads WHERE scope LIKE 'd:%'").rows {
                if let (scope, seq, generation) = try? row.decode((String, Int64, String).self) {
                    store.leases.loaded(scope, seq: seq, generation: generation)
                }
            }
            var result: [(DatabaseID, Document)] = []
            for row in try session.query("SELECT scope, path, fields, create_us, update_us FROM fg_documents WHERE scope LIKE 'd:%'").rows {
                let (scope, path, fields, created, updated) = try decode(row, (String, String, ByteBuffer, Int64, Int64).self)
                guard let database = PostgresStore.database(ofScope: scope) else { continue }
                result.append((database, try PostgresDocumentStorage.document(path, fields, created, updated)))
            }
            return result
        }
    }

    public func loadDatabase(_ id: DatabaseID) throws -> [Document] {
        let scope = PostgresStore.scope(id)
        return try store.read { session throws(FiregateError) -> [Document] in try store.loadScope(scope, session) }
    }

    public func position(_ id: DatabaseID) -> LogPosition? {
        let scope = PostgresStore.scope(id)
        guard let hold = store.leases.existing(scope) else { return nil }
        return LogPosition(generation: PostgresStore.generation(of: scope, stored: hold.generation), seq: hold.seq)
    }

    public func loggedCommits(_ id: DatabaseID, through seq: Int64, current: (ResourcePath) -> Document?) -> [LoggedDocumentCommit] {
        let scope = PostgresStore.scope(id)
        // Versions met so far, so a version logged twice (after one commit, before the next)
        // or still current is one value; read a page of rows at a time, decoded as they come.
        var seen: [ResourcePath: Document] = [:]
        let reuse = { (path: ResourcePath, updateUs: Int64) -> Document? in
            for candidate in [seen[path], current(path)] {
                if let candidate, candidate.updateTime.microseconds == updateUs { return candidate }
            }
            return nil
        }
        var commits: [LoggedDocumentCommit] = []
        var after: Int64 = 0
        while after < seq {
            guard let rows = try? store.readOnce({ session throws(FiregateError) in
                try session.query("""
                    SELECT seq, commit_us, body FROM fg_log WHERE scope = \(scope) AND seq > \(after) AND seq <= \(seq) ORDER BY seq LIMIT 500
                    """).rows
            }) else { return [] }
            var last: Int64?
            for row in rows {
                guard let (rowSeq, commitUs, body) = try? decode(row, (Int64, Int64, ByteBuffer).self), let entry = try? json(body) else { return [] }
                last = rowSeq
                // A clear, or a row logged without before-images, cannot be undone: history starts after it.
                guard entry["clear"] == nil, entry["before"] != nil,
                      let commit = try? PostgresTail.loggedCommit(entry, seq: rowSeq, commitUs: commitUs, reusing: reuse) else {
                    commits.removeAll()
                    continue
                }
                for document in commit.upserts { seen[document.path] = document }
                for path in commit.deletes { seen[path] = nil }
                commits.append(commit)
            }
            guard let last else { break }
            after = last
        }
        return commits
    }

    public func writeRefusal(_ id: DatabaseID) -> FiregateError? {
        store.writeRefusal(.documents(project: id.project, database: id.database))
    }

    public func follow(_ apply: @escaping @Sendable (DatabaseID, ReplicatedDocumentChange) -> Void) {
        store.tail.follow(documents: apply)
    }

    public func enqueue(_ batch: DocumentPersistBatch, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        store.queue.enqueue(.documents(batch, onDurable))
    }

    public func enqueueClear(_ database: DatabaseID, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let scope = PostgresStore.scope(database)
        store.queue.enqueue(.alone { store in
            onDurable(Result { () throws(FiregateError) in try store.clear(scope) })
        })
    }

    public func enqueueLoad(_ database: DatabaseID, completion: @escaping @Sendable (Result<[Document], any Error>) -> Void) {
        let scope = PostgresStore.scope(database)
        store.queue.enqueue(.alone { store in
            // The load and its replacing the memory, with the tail held off (see `followLock`).
            store.followLock.lock()
            defer { store.followLock.unlock() }
            completion(Result { () throws(FiregateError) -> [Document] in
                try store.read { session throws(FiregateError) -> [Document] in try store.loadScope(scope, session) }
            })
        })
    }

    static func document(_ path: String, _ fields: ByteBuffer, _ created: Int64, _ updated: Int64) throws(FiregateError) -> Document {
        let json: JSON
        do {
            json = try JSONParser.parse(fields.readableBytesView)
        } catch {
            throw FiregateError(.dataLoss, "The stored document \(path) is not valid JSON: \(error)")
        }
        return Document(path: ResourcePath(ResourcePath.segments(of: PostgresText.loaded(path))), fields: try Value.parseFields(json),
                        createTime: Timestamp(microseconds: created), updateTime: Timestamp(microseconds: updated))
    }
}

/// A row's columns, or INTERNAL naming the mismatch (a schema this code does not know).
func decode<each T: PostgresDecodable>(_ row: PostgresRow, _ type: (repeat each T).Type) throws(FiregateError) -> (repeat each T) {
    do {
        return try row.decode(type)
    } catch {
        throw FiregateError(.internal, "A PostgreSQL row did not have the expected columns: \(error)")
    }
}

extension PostgresStore {
    /// A database's documents and the log position they reflect (in the caller's snapshot),
    /// which the tail then follows from.
    func loadScope(_ scope: String, _ session: PostgresSession) throws(FiregateError) -> [Document] {
        let head = try session.query("SELECT seq, generation FROM fg_heads WHERE scope = \(scope)").rows.first
        let position = try? head?.decode((Int64, String).self)
        leases.loaded(scope, seq: position?.0 ?? 0, generation: position?.1)
        var documents: [Document] = []
        for row in try session.query("SELECT path, fields, create_us, update_us FROM fg_documents WHERE scope = \(scope)").rows {
            let (path, fields, created, updated) = try decode(row, (String, ByteBuffer, Int64, Int64).self)
            documents.append(try PostgresDocumentStorage.document(path, fields, created, updated))
        }
        return documents
    }

    /// Deletes every document of `scope`, fenced and logged like a commit.
    func clear(_ scope: String) throws(FiregateError) {
        if leases.hold(scope).epoch == nil { try acquire(scope) }
        let hold = leases.hold(scope)
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let generation = PostgresStore.newGeneration()
        let body = ByteBuffer(bytes: JSONWriter.bytes(.object(["clear": .bool(true), "generation": .string(generation)])))
        let rows = try writer.query("""
            WITH h AS (UPDATE fg_heads SET seq = seq + 1, commit_us = \(now), generation = \(generation)
                       WHERE scope = \(scope) AND owner = \(replicaID) AND owner_epoch = \(hold.epoch ?? -1) AND seq = \(hold.seq) RETURNING seq),
            d AS (DELETE FROM fg_documents WHERE scope = \(scope) AND EXISTS (SELECT 1 FROM h)),
            l AS (INSERT INTO fg_log (scope, seq, commit_us, body) SELECT \(scope), h.seq, \(now), \(body) FROM h)
            SELECT seq FROM h
            """).rows
        guard let seq = try? rows.first?.decode(Int64.self) else {
            leases.lost(scope)
            throw FiregateError(.unavailable, "Replica \(replicaID) no longer owns \(scope); the database was not cleared. Retry.")
        }
        leases.committed(scope, seq: seq)
        leases.generation(scope, generation)
    }

    /// A scope's generation as tokens carry it: the stored one, or for a scope never cleared
    /// (none stored, or empty) one made from its name, so that tokens of two databases differ.
    static func generation(of scope: String, stored: String?) -> String {
        if let stored, !stored.isEmpty { return stored }
        var hash: UInt32 = 2_166_136_261   // FNV-1a: the same in every process
        for byte in scope.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return String(format: "%08x", hash)
    }

    /// A new scope generation (eight hex digits).
    static func newGeneration() -> String {
        String(format: "%08x", UInt32.random(in: 0...UInt32.max))
    }
}
