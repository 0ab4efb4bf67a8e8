import FiregateModel
import FiregateStore
import Foundation

/// The emulated server: the document database, the tree database and the clock they share,
/// persisted in one `SQLiteStore`.
public final class Backend: Sendable {
    public let store: SQLiteStore
    public let clock: ServerClock
    public let documents: DocumentBackend
    public let tree: TreeBackend
    /// The project used when a request names none (the tree's default namespace).
    public let defaultProject: String

    /// Every schema step of the backend's tables, in order.
    public static var migrations: [StoreMigration] { DocumentBackend.migrations + TreeBackend.migrations }

    /// Opens (or creates) the store under `directory` — nil keeps everything in memory — and
    /// loads the persisted state.
    /// `extraMigrations` are the edge clients' tables, which live in the same store.
    public init(directory: URL?, defaultProject: String, extraMigrations: [StoreMigration] = []) async throws {
        let store = try SQLiteStore(directory: directory, migrations: Backend.migrations + extraMigrations)
        let clock = ServerClock()
        self.store = store
        self.clock = clock
        self.defaultProject = defaultProject
        let documentStorage: any DocumentStorage = directory == nil ? MemoryDocumentStorage() : SQLiteDocumentStorage(store: store)
        documents = try DocumentBackend(storage: documentStorage, clock: clock)
        tree = try await TreeBackend(store: store, clock: clock)
    }
}
