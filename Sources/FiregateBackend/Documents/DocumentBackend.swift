import FiregateModel
import FiregateStore
import Synchronization

/// The Firestore-style document databases, one per project and database id, created on
/// first use and loaded from storage at start.
public final class DocumentBackend: Sendable {
    public static let migrations: [StoreMigration] = SQLiteDocumentStorage.migrations

    let clock: ServerClock
    let storage: any DocumentStorage
    let operations: OperationsLog?
    private let databases: Mutex<[DatabaseID: DocumentDatabase]>

    public init(storage: any DocumentStorage, clock: ServerClock, operations: OperationsLog? = nil) throws {
        self.clock = clock
        self.storage = storage
        self.operations = operations
        var loaded: [DatabaseID: [Document]] = [:]
        for (database, document) in try storage.loadAll() { loaded[database, default: []].append(document) }
        var databases: [DatabaseID: DocumentDatabase] = [:]
        for (id, documents) in loaded {
            databases[id] = DocumentDatabase(id: id, clock: clock, storage: storage, operations: operations, documents: documents)
        }
        self.databases = Mutex(databases)
    }

    /// The database with this id, created empty if it does not exist yet.
    public func database(_ id: DatabaseID) -> DocumentDatabase {
        databases.withLock { databases in
            if let existing = databases[id] { return existing }
            let database = DocumentDatabase(id: id, clock: clock, storage: storage, operations: operations, documents: [])
            databases[id] = database
            return database
        }
    }

    /// Every database that exists.
    public var allDatabases: [DocumentDatabase] { databases.withLock { Array($0.values) } }
}
