import FiregateModel
import FiregateStore
import Foundation

/// The emulated server: the document database, the tree database and the clock they share,
/// persisted in one `SQLiteStore`.
public final class Backend: Sendable {
    public let store: SQLiteStore
    /// Where persistent edge clients keep their caches: `store`, or PostgreSQL with `--store`.
    public let edgeStore: any EdgeCacheStore
    /// The replicas sharing the store (PostgreSQL), or nil for a store of this process alone.
    public let replicas: (any ReplicaDirectory)?
    /// Commits an edge client sends to a database another replica owns go there.
    public let remoteCommits = RemoteCommits()
    public let clock: ServerClock
    public let documents: DocumentBackend
    public let tree: TreeBackend
    /// What happened, for the operations event stream.
    public let operations: OperationsLog
    /// Each edge client's and real SDK connection's steps, for the timeline routes.
    public let timelines: Timelines
    /// The security rules in force and the decisions they made.
    public let rules: SecurityRules
    /// The project used when a request names none (the tree's default namespace).
    public let defaultProject: String

    /// Every schema step of the backend's tables, in order.
    public static var migrations: [StoreMigration] { DocumentBackend.migrations + TreeBackend.migrations }

    /// Opens (or creates) the store under `directory` — nil keeps everything in memory — and
    /// loads the persisted state (the documents in the background with `loadInBackground`:
    /// see `DocumentBackend.loaded()`).
    /// `extraMigrations` are the edge clients' tables, which live in the same store.
    /// `documentStorage`, `treeStorage` and `edgeStore` replace the SQLite ones (PostgreSQL:
    /// `--store`).
    public init(directory: URL?, defaultProject: String, extraMigrations: [StoreMigration] = [], loadInBackground: Bool = false,
                documentStorage: (any DocumentStorage)? = nil, treeStorage: (any TreeStorage)? = nil,
                edgeStore: (any EdgeCacheStore)? = nil, replicas: (any ReplicaDirectory)? = nil) async throws {
        let store = try SQLiteStore(directory: directory, migrations: Backend.migrations + extraMigrations)
        let clock = ServerClock()
        self.store = store
        self.edgeStore = edgeStore ?? store
        self.replicas = replicas
        self.clock = clock
        self.defaultProject = defaultProject
        let operations = OperationsLog(clock: clock)
        self.operations = operations
        timelines = Timelines(clock: clock)
        rules = SecurityRules(clock: clock)
        let documentStorage: any DocumentStorage = documentStorage ?? (directory == nil ? MemoryDocumentStorage() : SQLiteDocumentStorage(store: store))
        documents = try DocumentBackend(storage: documentStorage, clock: clock, operations: operations, loadInBackground: loadInBackground)
        if let treeStorage {
            tree = TreeBackend(storage: treeStorage, clock: clock, settings: .fromEnvironment(), operations: operations)
        } else {
            tree = try await TreeBackend(store: store, clock: clock, operations: operations)
        }
        // Listens and streams judge themselves again when rules change.
        // (Weakly: the rules outlive nothing here, and must not keep the store open.)
        rules.onChange { [weak documents, weak tree, weak rules] change in
            switch change {
            case .firestore(let project):
                for database in documents?.allDatabases ?? [] where project == nil || database.id.project == project { database.feed.nudgeAll() }
            case .realtime(let namespace):
                guard let tree, let rules else { return }
                Task { await tree.rejudgeStreams(namespace: namespace, rules: rules) }
            }
        }
        clock.onChange { [weak operations, weak clock] time in
            operations?.record(.clock(frozen: clock?.isFrozen ?? false), at: time)
        }
    }

    /// Clears every document database and tree namespace, durably. Document listeners end
    /// with an error; tree streams get `cancel`.
    public func reset() async throws {
        for database in documents.allDatabases { try await database.reset() }
        try await tree.reset()
        await tree.cancelAllStreams(reason: "The emulator was reset.")
    }
}
