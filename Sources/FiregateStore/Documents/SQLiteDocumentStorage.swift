import FiregateModel
import Foundation
import GRDB
import Synchronization

/// Documents in the `documents` table: one row per document, fields as typed-value JSON.
public struct SQLiteDocumentStorage: DocumentStorage {
    let store: SQLiteStore

    public init(store: SQLiteStore) {
        self.store = store
    }

    public static let migrations: [StoreMigration] = [
        StoreMigration("documents-v1") { db in
            try db.execute(sql: """
                CREATE TABLE documents (
                    project TEXT NOT NULL,
                    database TEXT NOT NULL,
                    path TEXT NOT NULL,
                    fields BLOB NOT NULL,
                    create_us INTEGER NOT NULL,
                    update_us INTEGER NOT NULL,
                    PRIMARY KEY (project, database, path)
                ) WITHOUT ROWID
                """)
        },
    ]

    public func loadAll() throws -> [(DatabaseID, Document)] {
        try store.writer.read { db in
            var result: [(DatabaseID, Document)] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT project, database, path, fields, create_us, update_us FROM documents")
            while let row = try rows.next() {
                result.append((DatabaseID(project: row[0], database: row[1]), try SQLiteDocumentStorage.document(row, from: 2)))
            }
            return result
        }
    }

    public func enqueue(_ batch: DocumentPersistBatch, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let upserts = batch.upserts.map { doc in
            (doc.path.canonical, Data(JSONWriter.bytes(Value.fieldsJSON(doc.fields))), doc.createTime.microseconds, doc.updateTime.microseconds)
        }
        let deletes = batch.deletes.map(\.canonical)
        let project = batch.database.project, database = batch.database.database
        let companion = batch.companion.map { companion -> Result<GroupCommitter.Work, any Error> in
            guard let own = companion as? SQLiteCommitCompanion, own.store === store else {
                return .failure(UnsupportedCommitCompanion(companion: companion))
            }
            return .success(own.work)
        }
        store.committer.enqueue({ db in
            for (path, fields, created, updated) in upserts {
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO documents (project, database, path, fields, create_us, update_us) VALUES (?, ?, ?, ?, ?, ?)")
                    .execute(arguments: [project, database, path, fields, created, updated])
            }
            for path in deletes {
                try db.cachedStatement(sql: "DELETE FROM documents WHERE project = ? AND database = ? AND path = ?").execute(arguments: [project, database, path])
            }
            try companion?.get()(db)
        }, completion: onDurable)
    }

    /// A document from the columns `path, fields, create_us, update_us` starting at `column`.
    static func document(_ row: Row, from column: Int) throws -> Document {
        let path = ResourcePath(ResourcePath.segments(of: row[column] as String))
        let data: Data = row[column + 1]
        return Document(path: path, fields: try Value.parseFields(try JSONParser.parse(data)),
                        createTime: Timestamp(microseconds: row[column + 2]), updateTime: Timestamp(microseconds: row[column + 3]))
    }

    public func enqueueLoad(_ database: DatabaseID, completion: @escaping @Sendable (Result<[Document], any Error>) -> Void) {
        let project = database.project, name = database.database
        let loaded = Mutex<[Document]>([])
        store.committer.enqueue({ db in
            var documents: [Document] = []
            let rows = try Row.fetchCursor(db, sql: "SELECT path, fields, create_us, update_us FROM documents WHERE project = ? AND database = ?",
                                           arguments: [project, name])
            while let row = try rows.next() {
                documents.append(try SQLiteDocumentStorage.document(row, from: 0))
            }
            loaded.withLock { $0 = documents }
        }, completion: { result in
            completion(result.map { loaded.withLock { $0 } })
        })
    }

    public func enqueueClear(_ database: DatabaseID, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let project = database.project, name = database.database
        store.committer.enqueue({ db in
            try db.cachedStatement(sql: "DELETE FROM documents WHERE project = ? AND database = ?").execute(arguments: [project, name])
        }, completion: onDurable)
    }
}
