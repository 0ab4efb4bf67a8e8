import FiregateModel
import FiregateStore
import Synchronization

/// The Firestore-style document databases, one per project and database id, created on
/// first use and loaded from storage at start — in the background when asked, so the server
/// answers before a large store is in memory (docs/benchmarks.md, start); every access to the
/// databases waits for that load.
public final class DocumentBackend: Sendable {
    public static let migrations: [StoreMigration] = SQLiteDocumentStorage.migrations

    let clock: ServerClock
    let storage: any DocumentStorage
    let operations: OperationsLog?
    private let databases = Mutex<[DatabaseID: DocumentDatabase]>([:])
    private let startupLoad: StartupLoad?

    /// Loads the stored documents before returning, or with `loadInBackground` on a thread of
    /// its own (see `loaded()`).
    public init(storage: any DocumentStorage, clock: ServerClock, operations: OperationsLog? = nil, loadInBackground: Bool = false) throws {
        self.clock = clock
        self.storage = storage
        self.operations = operations
        startupLoad = loadInBackground ? StartupLoad() : nil
        // Commits other replicas make (a store shared through PostgreSQL) reach the databases here.
        storage.follow { [weak self] id, change in self?.database(id).applyReplicated(change) }
        if let startupLoad {
            startupLoad.start { [self] in try load() }
        } else {
            try load()
        }
    }

    private func load() throws {
        var loaded: [DatabaseID: [Document]] = [:]
        for (database, document) in try storage.loadAll() { loaded[database, default: []].append(document) }
        var made: [DatabaseID: DocumentDatabase] = [:]
        for (id, documents) in loaded {
            made[id] = DocumentDatabase(id: id, clock: clock, storage: storage, operations: operations, documents: documents)
        }
        databases.withLock { $0.merge(made) { _, stored in stored } }
    }

    /// Returns once the stored documents are in memory; throws when they could not be loaded
    /// (the server stops then).
    public func loaded() async throws {
        try await startupLoad?.wait()
    }

    /// Whether the stored documents are in memory, so that access does not wait (the HTTP
    /// fast path must not block its event loop on the start's load).
    public var isLoaded: Bool { startupLoad?.isFinished ?? true }

    /// The database with this id, created empty if it does not exist yet.
    public func database(_ id: DatabaseID) -> DocumentDatabase {
        startupLoad?.waitUntilLoaded()
        return databases.withLock { databases in
            if let existing = databases[id] { return existing }
            // Empty unless another replica wrote it since the start; a store that cannot say
            // now leaves it empty, and the first write here finds the log ahead and reloads.
            let stored = (try? storage.loadDatabase(id)) ?? []
            let database = DocumentDatabase(id: id, clock: clock, storage: storage, operations: operations, documents: stored)
            databases[id] = database
            return database
        }
    }

    /// Every database that exists.
    public var allDatabases: [DocumentDatabase] {
        startupLoad?.waitUntilLoaded()
        return databases.withLock { Array($0.values) }
    }
}
