import FiregateBackend
import FiregateModel
import FiregateStore
import Synchronization

/// Every edge client of the server, by id. Any call naming an unknown client creates it with
/// default settings; a persistent client's saved settings, cache and queue are loaded back.
public final class EdgeClients: Sendable {
    public static let migrations: [StoreMigration] = EdgeCacheStorage.migrations

    let backend: Backend
    private let clients = Mutex<[String: EdgeClient]>([:])

    public init(backend: Backend) {
        self.backend = backend
    }

    /// The client, created (or restored from storage) on first use.
    public func client(_ id: String) -> EdgeClient {
        clients.withLock { clients in
            if let existing = clients[id] { return existing }
            let storage = EdgeCacheStorage(store: backend.store, clientID: id)
            var settings = ClientSettings(project: backend.defaultProject)
            let snapshot = try? storage.load()
            if let snapshot, let saved = try? ClientSettings.parse(snapshot.settings, over: settings) { settings = saved }
            let client = EdgeClient(id: id, backend: backend, settings: settings, storage: storage, restoring: snapshot)
            if snapshot != nil {
                // Writes queued before the server restarted resume, as an app's do at start.
                Task { await client.pumpWrites() }
            }
            clients[id] = client
            return client
        }
    }

    public func existing(_ id: String) -> EdgeClient? { clients.withLock { $0[id] } }

    public var all: [EdgeClient] { clients.withLock { Array($0.values) } }

    /// Removes the client and what it persisted.
    public func delete(_ id: String) async -> Bool {
        guard let client = clients.withLock({ $0.removeValue(forKey: id) }) else { return false }
        await client.shutdown()
        return true
    }
}
