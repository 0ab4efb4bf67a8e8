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
    /// Shared web persistences by key, and the one each open tab belongs to.
    private let shared = Mutex<(byKey: [String: SharedPersistence], byTab: [String: SharedPersistence])>(([:], [:]))
    /// Cache statistics of clients that were deleted, so server-wide totals never go back.
    private let retired = Mutex(CacheStatistics())
    private let gcScheduler: GarbageCollectionScheduler

    public init(backend: Backend) {
        self.backend = backend
        gcScheduler = GarbageCollectionScheduler(clock: backend.clock)
    }

    /// The client, created (or restored from storage) on first use. A tab's calls go to its
    /// shared persistence's engine.
    public func client(_ id: String) -> EdgeClient {
        if let persistence = persistence(ofTab: id) ?? persistence(engineID: id) { return persistence.engine }
        return clients.withLock { clients in
            if let existing = clients[id] { return existing }
            let client = makeClient(id)
            clients[id] = client
            return client
        }
    }

    /// A client with `id`'s saved settings, cache and queue, if it saved any.
    private func makeClient(_ id: String) -> EdgeClient {
            let storage = EdgeCacheStorage(store: backend.store, clientID: id)
            var settings = ClientSettings(project: backend.defaultProject)
            let snapshot = try? storage.load()
            if let snapshot, let saved = try? ClientSettings.parse(snapshot.settings, over: settings) { settings = saved }
            let treeSnapshot = (try? TreeCacheStorage(store: backend.store, clientID: id).load()).flatMap { $0.isEmpty ? nil : $0 }
            let client = EdgeClient(id: id, backend: backend, settings: settings, storage: storage, restoring: snapshot, gcScheduler: gcScheduler,
                                    treeSnapshot: treeSnapshot)
            if snapshot != nil {
                // Writes queued before the server restarted resume, as an app's do at start.
                Task { await client.pumpWrites() }
            }
            if treeSnapshot?.writes.isEmpty == false { Task { await client.tree.begin() } }
            backend.operations.record(.client(client: id, action: snapshot == nil && treeSnapshot == nil ? "created" : "restored"))
            return client
    }

    // MARK: Tabs

    /// The shared persistence `id` is an open tab of, if it is one.
    public func persistence(ofTab id: String) -> SharedPersistence? { shared.withLock { $0.byTab[id] } }

    /// The shared persistence whose engine has this id (`sharedWith:<key>`).
    func persistence(engineID id: String) -> SharedPersistence? {
        guard id.hasPrefix("sharedWith:") else { return nil }
        return shared.withLock { $0.byKey[String(id.dropFirst("sharedWith:".count))] }
    }

    /// The id of the engine behind the persistence `key`; it stores the shared cache and queue.
    static func engineID(_ key: String) -> String { "sharedWith:" + key }

    /// Opens tab `id` of the web persistence the body's `sharedWith` names (made, or restored
    /// from storage, by its first tab). Tabs need web persistence and the persistence's
    /// project and database.
    public func openTab(_ id: String, _ body: JSON, _ request: SharedPersistence.TabRequest) async throws(FiregateError) -> SharedPersistence {
        if persistence(ofTab: id) != nil { throw .clientState("Tab \"\(id)\" is already open; close it (DELETE) before opening it again.") }
        if let standalone = existing(id) {
            guard await !standalone.started else {
                throw .clientState("Client \"\(id)\" has already been started on its own persistence; a started client cannot become a tab.")
            }
            _ = await delete(id)
        }
        let asked = try ClientSettings.parse(body, over: ClientSettings(project: backend.defaultProject))
        guard asked.platform == .web, asked.persistence == .persistent else {
            throw .invalidArgument("sharedWith needs {\"platform\": \"web\", \"persistence\": \"persistent\"}: tabs share the web SDK's IndexedDB persistence.")
        }
        let (persistence, created) = shared.withLock { shared -> (SharedPersistence, Bool) in
            if let existing = shared.byKey[request.key] { return (existing, false) }
            let persistence = SharedPersistence(key: request.key, engine: makeClient(EdgeClients.engineID(request.key)), clock: backend.clock)
            shared.byKey[request.key] = persistence
            return (persistence, true)
        }
        let current = await persistence.engine.settings
        let engineStarted = await persistence.engine.started
        if created || !engineStarted {
            try await persistence.engine.configure(body)
        } else if current.project != asked.project || current.databaseID != asked.databaseID {
            throw .invalidArgument("Persistence \"\(request.key)\" belongs to \(current.project)/\(current.database); a tab of it cannot use another project or database.")
        }
        shared.withLock { $0.byTab[id] = persistence }
        do {
            try await persistence.open(id, request)
        } catch {
            shared.withLock { _ = $0.byTab.removeValue(forKey: id) }
            throw error
        }
        backend.operations.record(.client(client: id, action: "tabOpened"))
        return persistence
    }

    /// Closes tab `id`; its persistence, and what it stored, stay for the next tab.
    func closeTab(_ id: String) async -> Bool {
        guard let persistence = shared.withLock({ $0.byTab.removeValue(forKey: id) }) else { return false }
        await persistence.close(id)
        backend.operations.record(.client(client: id, action: "tabClosed"))
        return true
    }

    /// A client's state; a tab's is its engine's, under the tab's id, with its own network
    /// switch and its place in the persistence (`tab`).
    public func state(of id: String) async -> JSON {
        guard let persistence = persistence(ofTab: id) else { return await client(id).state() }
        let tab = persistence.tabState(id)
        guard case .object(var members) = await persistence.engine.state() else { return .null }
        members["engine"] = members["id"]
        members["id"] = .string(id)
        members["tab"] = tab
        if case .object(var network)? = members["network"] {
            network["online"] = tab["networkEnabled"]
            members["network"] = .object(network)
        }
        if let stale = persistence.staleWatch(id), stale["scripted"] == .bool(true) {
            members["watch"] = stale
        } else if tab["primary"] != .bool(true), case .object(var watch)? = members["watch"], watch["scripted"] == .bool(true) {
            // The watch stream is the primary's: a secondary tab listens to nothing itself.
            for name in ["targets", "limboDocuments", "enqueuedLimboDocuments"] { watch[name] = [] }
            members["watch"] = .object(watch)
        }
        return .object(members)
    }

    public func existing(_ id: String) -> EdgeClient? { clients.withLock { $0[id] } }

    /// Replaces every client with the archived ones (import): their settings, network switch,
    /// cache and queue; persistent ones are stored before this returns, and their queued
    /// writes are sent once online.
    public func replaceAll(with archives: [ClientArchive], reason: FiregateError) async throws {
        await removeAll(reason: reason)
        for archive in archives {
            let storage = EdgeCacheStorage(store: backend.store, clientID: archive.id)
            if archive.settings.persistence == .persistent {
                try await storage.save(archive.snapshot)
                try await TreeCacheStorage(store: backend.store, clientID: archive.id).save(archive.tree)
            }
            let client = EdgeClient(id: archive.id, backend: backend, settings: archive.settings, storage: storage, restoring: archive.snapshot,
                                    gcScheduler: gcScheduler, treeSnapshot: archive.tree)
            await client.restoreNetwork(archive.network)
            await client.updateTreeLink()
            if !archive.tree.writes.isEmpty { await client.tree.begin() }
            clients.withLock { $0[archive.id] = client }
            backend.operations.record(.client(client: archive.id, action: "imported"))
            await client.pumpWrites()
        }
    }

    /// What `GET /clients` lists: every client on its own persistence, then every open tab.
    public var listedIDs: [String] {
        clients.withLock { Array($0.keys) } + shared.withLock { $0.byTab.keys.sorted() }
    }

    /// Every client, and the engine of every shared persistence.
    public var all: [EdgeClient] {
        clients.withLock { Array($0.values) } + shared.withLock { $0.byKey.values.map(\.engine) }
    }

    /// Every client's archive, by id.
    public func archives() async -> [JSON] {
        var result: [JSON] = []
        for client in all.sorted(by: { $0.id < $1.id }) { result.append(await client.archive()) }
        return result
    }

    /// Removes every client and what it persisted; their listeners end with `reason`.
    public func removeAll(reason: FiregateError) async {
        let engines = shared.withLock { shared in
            defer { shared = ([:], [:]) }
            return shared.byKey.values.map(\.engine)
        }
        let removed = clients.withLock { clients in
            defer { clients.removeAll() }
            return Array(clients.values)
        } + engines
        for client in removed { await retire(client, reason: reason) }
    }

    /// Totals of the statistics of deleted clients.
    public var retiredStatistics: CacheStatistics { retired.withLock { $0 } }

    private func retire(_ client: EdgeClient, reason: FiregateError?) async {
        let statistics = await client.cacheStatistics
        retired.withLock { total in
            total.hits += statistics.hits
            total.misses += statistics.misses
            total.evictions += statistics.evictions
        }
        await client.shutdown(reason: reason)
    }

    /// Removes the client and what it persisted.
    public func delete(_ id: String) async -> Bool {
        if await closeTab(id) { return true }
        if let persistence = persistence(engineID: id) {
            // The shared persistence itself: its tabs close, then it goes with what it stored.
            let tabs = shared.withLock { shared in
                shared.byKey[persistence.key] = nil
                let tabs = shared.byTab.filter { $0.value === persistence }.map(\.key)
                for tab in tabs { shared.byTab[tab] = nil }
                return tabs
            }
            for tab in tabs { await persistence.close(tab) }
            await retire(persistence.engine, reason: nil)
            return true
        }
        guard let client = clients.withLock({ $0.removeValue(forKey: id) }) else { return false }
        await retire(client, reason: nil)
        return true
    }
}
