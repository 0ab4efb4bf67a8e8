import FiregateBackend
import FiregateModel
import FiregateStore
import Synchronization

/// Every edge client of the server, by id. Any call naming an unknown client creates it with
/// default settings; a persistent client's saved settings, cache and queue are loaded back.
public final class EdgeClients: Sendable {
    public static let migrations: [StoreMigration] = EdgeCacheStorage.migrations + TreeCacheStorage.migrations

    let backend: Backend
    private let clients = Mutex<[String: EdgeClient]>([:])
    /// Shared web persistences and their tabs.
    let shared = SharedPersistences()
    /// Cache statistics of clients that were deleted, so server-wide totals never go back.
    private let retired = Mutex(CacheStatistics())
    private let gcScheduler: GarbageCollectionScheduler

    public init(backend: Backend) {
        self.backend = backend
        gcScheduler = GarbageCollectionScheduler(clock: backend.clock)
        backend.replicas?.onClientsLost { [weak self] ids in
            guard let self else { return }
            Task { await self.relinquish(ids) }
        }
    }

    /// Stops clients another replica has taken over (docs/replicas.md): their listeners end
    /// UNAVAILABLE and they send nothing more; what they persisted stays, for the new owner.
    public func relinquish(_ ids: [String]) async {
        let removed = clients.withLock { clients in ids.compactMap { clients.removeValue(forKey: $0) } }
        for client in removed {
            await client.relinquish(reason: FiregateError(.unavailable, "Another replica runs client \(client.id) now; connect again."))
        }
    }

    /// The client, created (or restored from storage) on first use. A tab's calls go to its
    /// shared persistence's engine.
    public func client(_ id: String) -> EdgeClient {
        if let persistence = shared.openTab(id) { return persistence.engine }
        return clients.withLock { clients in
            if let existing = clients[id] { return existing }
            let client = makeClient(id)
            clients[id] = client
            return client
        }
    }

    /// A client with `id`'s saved settings, cache and queue, if it saved any.
    func makeClient(_ id: String) -> EdgeClient {
        let storage = EdgeCacheStorage(store: backend.edgeStore, clientID: id)
        var settings = ClientSettings(project: backend.defaultProject)
        let snapshot = try? storage.load()
        if let snapshot, let saved = try? ClientSettings.parse(snapshot.settings.withoutMember(EdgeClient.savedNetworkKey), over: settings) {
            settings = saved
        }
        let treeSnapshot = (try? TreeCacheStorage(store: backend.edgeStore, clientID: id).load()).flatMap { $0.isEmpty ? nil : $0 }
        let client = EdgeClient(id: id, backend: backend, settings: settings, storage: storage, restoring: snapshot, gcScheduler: gcScheduler,
                                treeSnapshot: treeSnapshot)
        if snapshot != nil {
            // Writes queued before the server restarted resume, as an app's do at start — once
            // its device is online (the network switch is restored with it).
            Task {
                await client.updateTreeLink()
                await client.pumpWrites()
            }
        }
        if treeSnapshot?.writes.isEmpty == false { Task { await client.tree.begin() } }
        let action = snapshot == nil && treeSnapshot == nil ? "created" : "restored"
        backend.operations.record(.client(client: id, action: action))
        backend.timelines.open(kind: "client", name: id, protocol: "edge", project: settings.databaseID.project, action: action)
        return client
    }

    public func existing(_ id: String) -> EdgeClient? { clients.withLock { $0[id] } }

    /// Replaces every client with the archived ones (import): their settings, network switch,
    /// cache and queue; persistent ones are stored before this returns, and their queued
    /// writes are sent once online.
    public func replaceAll(with archives: [ClientArchive], reason: FiregateError) async throws {
        await removeAll(reason: reason)
        for archive in archives {
            let storage = EdgeCacheStorage(store: backend.edgeStore, clientID: archive.id)
            if archive.settings.persistence == .persistent {
                try await storage.save(archive.snapshot)
                try await TreeCacheStorage(store: backend.edgeStore, clientID: archive.id).save(archive.tree)
            }
            let client = EdgeClient(id: archive.id, backend: backend, settings: archive.settings, storage: storage, restoring: archive.snapshot,
                                    gcScheduler: gcScheduler, treeSnapshot: archive.tree)
            await client.restoreNetwork(archive.network)
            await client.updateTreeLink()
            if !archive.tree.writes.isEmpty { await client.tree.begin() }
            if let key = EdgeClients.sharedPersistenceKey(archive.id) {
                // A shared persistence comes back without tabs; the next tab opening it finds
                // its cache and queue, and the network waits for a primary.
                await client.pauseUntilPrimary()
                _ = shared.persistence(key) { SharedPersistence(key: key, engine: client, clock: backend.clock) }
            } else {
                clients.withLock { $0[archive.id] = client }
            }
            backend.operations.record(.client(client: archive.id, action: "imported"))
            backend.timelines.open(kind: "client", name: archive.id, protocol: "edge", project: archive.settings.databaseID.project, action: "imported")
            await client.pumpWrites()
        }
    }

    /// What `GET /clients` lists: every client on its own persistence, then every open tab.
    public var listedIDs: [String] {
        clients.withLock { Array($0.keys) } + shared.openTabIDs
    }

    /// Every client, and the engine of every shared persistence.
    public var all: [EdgeClient] {
        clients.withLock { Array($0.values) } + shared.engines
    }

    /// Every client's archive, by id.
    public func archives() async -> [JSON] {
        var result: [JSON] = []
        for client in all.sorted(by: { $0.id < $1.id }) { result.append(await client.archive()) }
        return result
    }

    /// Removes every client and what it persisted; their listeners end with `reason`.
    public func removeAll(reason: FiregateError) async {
        let engines = shared.removeAll().map(\.engine)
        let removed = clients.withLock { clients in
            defer { clients.removeAll() }
            return Array(clients.values)
        } + engines
        for client in removed { await retire(client, reason: reason) }
    }

    /// Totals of the statistics of deleted clients.
    public var retiredStatistics: CacheStatistics { retired.withLock { $0 } }

    func retire(_ client: EdgeClient, reason: FiregateError?) async {
        let statistics = await client.local.cacheStatistics
        retired.withLock { total in
            total.hits += statistics.hits
            total.misses += statistics.misses
            total.evictions += statistics.evictions
        }
        await client.shutdown(reason: reason)
    }

    /// Removes the client and what it persisted.
    public func delete(_ id: String) async -> Bool {
        if await closeTab(id, remember: false) || shared.forgetClosed(id) { return true }
        guard let client = clients.withLock({ $0.removeValue(forKey: id) }) else { return false }
        await retire(client, reason: nil)
        backend.replicas?.releaseClient(id)
        return true
    }
}
