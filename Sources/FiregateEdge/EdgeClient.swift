import FiregateBackend
import FiregateModel
import FiregateStore
import Foundation

/// One emulated SDK instance: local cache, mutation queue, listeners, network switch and test
/// gates, with its connection to the backend (watch for listeners, a write pipeline for the
/// queue). An actor: everything a client does happens in order, isolated from other clients.
public actor EdgeClient {
    public let id: String
    let backend: Backend
    public internal(set) var settings: ClientSettings
    var terminated = false
    /// Set by the first data call; settings can no longer change afterwards (the SDK's rule).
    var started = false

    /// The network switch, gates, watch and write pipeline (the SDK's RemoteStore).
    var remote = RemoteStore()
    /// The caches, queues, targets and their storage (the SDK's LocalStore).
    var local: LocalStore
    /// Each batch's state and who waits on it.
    var writeCallbacks = WriteCallbacks()
    /// Runs the LRU collection on the SDK's schedule once the client has started.
    let gcScheduler: GarbageCollectionScheduler?
    /// The Realtime Database side of the client: its own actor, told about the network,
    /// gates and lifecycle by this one. Made on first use, so a documents-only client pays
    /// nothing for it.
    var treeSync: TreeSync?
    var auth: ClientAuth?
    var heartbeat = HeartbeatMonitor()

    /// The listeners and snapshots-in-sync observers, and what is yielded to them.
    var events: EventManager
    /// Each listener's query state and the limbo lookups (the sync engine's query side).
    var queries = QueryStates()

    /// On a shared persistence: what the engine knows of its tabs, and their notification streams.
    var tabs = TabCoordinator()

    init(id: String, backend: Backend, settings: ClientSettings, storage: EdgeCacheStorage?, restoring snapshot: EdgeCacheStorage.Snapshot?,
         gcScheduler: GarbageCollectionScheduler? = nil, treeSnapshot: TreeCacheStorage.Snapshot? = nil) {
        self.id = id
        self.backend = backend
        self.gcScheduler = gcScheduler
        self.settings = settings
        events = EventManager(timeline: backend.timelines.recorder(TimelineLane.clientID(id)))
        local = LocalStore(storage: storage, persistent: settings.persistence == .persistent, clock: backend.clock)
        if let saved = snapshot?.settings.member(EdgeClient.savedNetworkKey), saved != .null {
            var conditions = NetworkConditions()
            if (try? conditions.update(saved)) != nil { remote.setNetwork(conditions) }
        }
        let savedAuth = treeSnapshot?.auth.flatMap(ClientAuth.init(json:))
        auth = savedAuth
        if let treeSnapshot, !treeSnapshot.writes.isEmpty || !treeSnapshot.rows.isEmpty || !treeSnapshot.queries.isEmpty {
            treeSync = EdgeClient.makeTree(id: id, backend: backend, settings: settings, link: TreeSync.Link(), restoring: treeSnapshot)
        }
        if let snapshot {
            writeCallbacks.restore(local.restore(snapshot, database: settings.databaseID, user: savedAuth?.uid))
        }
    }

    var database: DocumentDatabase { backend.documents.database(settings.databaseID) }

    /// The client's lane of the timeline (docs/timeline.md).
    var timeline: TimelineRecorder { backend.timelines.recorder(TimelineLane.clientID(id)) }

    /// The tree side, made on first use with the client's settings and link.
    public var tree: TreeSync {
        if let treeSync { return treeSync }
        let created = EdgeClient.makeTree(id: id, backend: backend, settings: settings, link: treeLink, restoring: nil)
        treeSync = created
        return created
    }

    private static func makeTree(id: String, backend: Backend, settings: ClientSettings, link: TreeSync.Link,
                                 restoring snapshot: TreeCacheStorage.Snapshot?) -> TreeSync {
        TreeSync(clientID: id, backend: backend, storage: TreeCacheStorage(store: backend.edgeStore, clientID: id), namespace: settings.namespace,
                 persistent: settings.persistence == .persistent, clockOffsetMs: settings.clockOffsetMs,
                 cacheSizeBytes: settings.treeCacheSizeBytes, link: link, restoring: snapshot)
    }

    /// What the network switch, the gates and the auth token allow the tree side now.
    var treeLink: TreeSync.Link {
        TreeSync.Link(online: remote.network.online && !heartbeat.dropped, holdWatch: remote.gates.holdWatch, holdWrites: remote.gates.holdWrites, writesPaused: writesPaused,
                      identity: rulesIdentity)
    }
    var onlineState: OnlineState {
        remote.network.online && !(remote.scripted?.offline ?? false) && !remote.recovery.holdsStorageFailure ? .online : .offline
    }

    /// The client's clock: the server clock plus the configured offset.
    public func now() -> Timestamp {
        Timestamp(microseconds: backend.clock.nowMicros() + settings.clockOffsetMs * 1000)
    }

    func localView() -> LocalViewBuilder {
        local.compactIndexes()
        return LocalViewBuilder(database: settings.databaseID, remote: local.remoteDocuments, queue: local.mutationQueue)
    }

    /// The local view of `user`'s writes: a tab signed in as another user than the primary's
    /// sees its own user's queue over the shared cache, as the SDK's per-user queues do.
    func localView(for user: String) -> LocalViewBuilder {
        guard user != currentUser else { return localView() }
        return LocalViewBuilder(database: settings.databaseID, remote: local.remoteDocuments, queue: local.queuesByUser[user] ?? MutationQueue())
    }

    /// The user a listener's or a write's tab is signed in as (the client's own user when it
    /// is no tab).
    func user(of tab: String?) -> String { tab.flatMap { tabs.context.users[$0] } ?? currentUser }

    /// Fails data calls on a terminated client, and marks the client started.
    func beginDataCall() throws(FiregateError) {
        if terminated { throw .clientState("The client has already been terminated.") }
        if !started {
            started = true
            gcScheduler?.schedule(self, afterMicros: LruGarbageCollector.initialDelayMicros)
        }
    }

    // MARK: Control

    /// PUT /clients/{id}: applies settings, refused once the client has started.
    public func configure(_ json: JSON) async throws(FiregateError) {
        let updated = try ClientSettings.parse(json, over: settings)
        guard updated != settings else { return }
        if started && !terminated {
            throw .clientState("Firestore has already been started and its settings can no longer be changed. You can only modify settings before calling any other methods on a Firestore object.")
        }
        settings = updated
        local.setPersistent(settings.persistence == .persistent)
        await treeSync?.configure(namespace: settings.namespace, persistent: settings.persistence == .persistent, clockOffsetMs: settings.clockOffsetMs,
                             cacheSizeBytes: settings.treeCacheSizeBytes)
        persistSettings()
        backend.operations.record(.client(client: id, action: "configured"))
        backend.timelines.setProject(settings.databaseID.project, of: TimelineLane.clientID(id))
    }

    /// A persistent client's settings, with its device network: the test's switch stays as it
    /// was set when the client is restored (a server restart, or another replica taking it over).
    func persistSettings() {
        local.saveSettings(settings.json.withMember(EdgeClient.savedNetworkKey, remote.network.json))
    }

    /// Where the saved settings keep the network switch.
    static let savedNetworkKey = "network"

    public func state() async -> JSON {
        [
            "tree": await treeSync?.state() ?? TreeSync.idleState,
            "auth": authJSON,
            "id": .string(id),
            "settings": settings.json,
            "network": remote.network.json,
            "gates": remote.gates.json,
            "terminated": .bool(terminated),
            "pendingWrites": .int(Int64(local.mutationQueue.count)),
            "cache": [
                "bytes": .int(Int64(cacheBytes)), "documents": .int(Int64(local.remoteDocuments.count)), "targets": .int(Int64(local.targetCache.targets.count)),
                "documentBytes": .int(Int64(local.remoteDocuments.byteSize)), "targetBytes": .int(Int64(local.targetCache.byteSize)),
                "mutationBytes": .int(Int64(local.mutationQueue.byteSize)),
                "hits": .int(local.cacheStatistics.hits), "misses": .int(local.cacheStatistics.misses), "evictions": .int(local.cacheStatistics.evictions),
            ],
            "listeners": .int(Int64(queries.states.count)),
            "indexes": [
                "count": .int(Int64(local.remoteDocuments.indexes.indexes.count)), "autoCreation": .bool(local.indexAutoCreation),
                "used": .bool(usesIndexes), "entries": .int(Int64(local.remoteDocuments.indexes.entryCount)),
            ],
            "gc": [
                "garbageCollector": .string(settings.garbageCollector.rawValue), "cacheSizeBytes": .int(settings.cacheSizeBytes),
                "runs": .int(Int64(local.gcRuns)), "lastRun": local.lastGC,
            ],
            "lastEventId": .int(events.eventCounter),
            "watch": scriptedWatchJSON,
            "faults": faultsJSON,
        ]
    }

    /// The client as an export archive holds it.
    public func archive() async -> JSON {
        ClientArchive.encode(id: id, settings: settings, network: remote.network, remote: local.remoteDocuments, queue: local.mutationQueue, parked: local.queuesByUser, targets: local.targetCache,
                             indexes: indexDefinitions, tree: await treeSync?.archive(), auth: auth,
                             bundles: local.bundles.isEmpty ? nil : local.bundles.json)
    }

    /// What `/metrics` adds up over clients.
    public func sample() -> ClientSample {
        ClientSample(online: remote.network.online, cacheBytes: cacheBytes, cacheDocuments: local.remoteDocuments.count,
                     cache: local.cacheStatistics, pendingWrites: local.mutationQueue.count)
    }

    public func disableNetwork() async {
        guard remote.network.online else { return }
        remote.setOnline(false)
        persistSettings()
        goOffline()
        await updateTreeLink()
    }

    public func enableNetwork() async {
        guard !remote.network.online else { return }
        remote.setOnline(true)
        persistSettings()
        goOnline()
        await updateTreeLink()
    }

    public func setNetwork(_ json: JSON) async throws(FiregateError) {
        var conditions = remote.network
        try conditions.update(json)
        let wasOnline = remote.network.online
        remote.setNetwork(conditions)
        persistSettings()
        if wasOnline && !conditions.online { goOffline() }
        if !wasOnline && conditions.online { goOnline() }
        await updateTreeLink()
    }

    /// Tells the tree side what the network switch, the gates and the auth token allow now.
    func updateTreeLink() async {
        await treeSync?.setLink(treeLink)
    }

    /// The tree side for a data call: fails on a terminated client, and counts as activity.
    public func treeAccess() async throws(FiregateError) -> TreeSync {
        try beginDataCall()
        await noteActivity()
        return tree
    }

    public func networkJSON() -> JSON { remote.network.json }

    /// An imported client's device network, set before it does anything.
    func restoreNetwork(_ conditions: NetworkConditions) {
        remote.setNetwork(conditions)
        persistSettings()
    }

    public var isOnline: Bool { remote.network.online }
    public var hasPendingWrites: Bool { !local.mutationQueue.isEmpty }

    public func setGates(_ json: JSON) async throws(FiregateError) {
        guard case .object = json else { throw .invalidArgument("Gates must be a JSON object.") }
        var gates = remote.gates
        if let hold = json["holdWatch"], hold != .null {
            guard let b = hold.boolValue else { throw .invalidArgument("holdWatch must be a boolean.") }
            gates.holdWatch = b
        }
        if let hold = json["holdWrites"], hold != .null {
            guard let b = hold.boolValue else { throw .invalidArgument("holdWrites must be a boolean.") }
            gates.holdWrites = b
        }
        if let limit = json["maxConcurrentLimboResolutions"], limit != .null {
            guard let n = limit.integerLike, n >= 1, n <= 1_000_000 else {
                throw .invalidArgument("maxConcurrentLimboResolutions must be an integer from 1 to 1000000.")
            }
            gates.maxConcurrentLimboResolutions = Int(n)
        }
        if let scripted = json["scriptedWatch"], scripted != .null, scripted.boolValue == nil {
            throw .invalidArgument("scriptedWatch must be a boolean.")
        }
        remote.setGates(gates)
        if let scripted = json["scriptedWatch"], scripted != .null {
            guard let b = scripted.boolValue else { throw .invalidArgument("scriptedWatch must be a boolean.") }
            setScriptedWatch(b)
        }
        if !remote.gates.holdWatch { releaseWatch() }
        if !remote.gates.holdWrites { pumpWrites() }
        await updateTreeLink()
    }

    public func gatesJSON() -> JSON { remote.gates.json }

    /// App restart: listeners end; a memory cache and its queued writes are lost.
    public func restart() async -> Int {
        let treeLost = await treeSync?.restart() ?? 0
        endListeners(with: nil)
        stopWatch()
        gcScheduler?.cancel(self)
        var lost = 0
        if settings.persistence == .memory {
            auth = nil  // FirebaseAuth keeps the user on disk only with persistence
            for batch in local.mutationQueue.batches + local.queuesByUser.values.flatMap(\.batches) {
                completeWrite(batch.id, .rejected(FiregateError(.cancelled, "The write was lost when the app restarted without persistence.")))
                lost += 1
            }
        }
        // The retries of the old instance are gone with it; the persistence opens anew.
        local.beginNewInstance()
        remote.dropRecovery()
        _ = remote.release(.storageFailure)
        resetScriptedWatch()
        terminated = false
        started = false
        remote.stopSending()
        backend.operations.record(.client(client: id, action: "restarted"))
        timeline.lifecycle("restarted")
        pumpWrites()
        return lost + treeLost
    }

    public func terminate() async {
        await stop(ending: nil)
        backend.operations.record(.client(client: id, action: "terminated"))
        timeline.lifecycle("terminated")
    }

    /// terminate()'s work: the tree side, listeners, watch and collector stop; nothing is sent.
    private func stop(ending reason: FiregateError?) async {
        await treeSync?.terminate()
        endListeners(with: reason)
        stopWatch()
        resetScriptedWatch()
        gcScheduler?.cancel(self)
        terminated = true
    }

    /// Stops the client here because another replica runs it now: as `terminate()`, its
    /// listeners ending with `reason`; its persisted state is the new owner's.
    func relinquish(reason: FiregateError) async {
        await stop(ending: reason)
        heartbeat.stop()
        backend.operations.record(.client(client: id, action: "relinquished"))
        timeline.lifecycle("relinquished")
    }

    public func clearPersistence() async throws(FiregateError) {
        guard terminated else {
            throw .clientState("Persistence can only be cleared before a Firestore instance is initialized or after it is terminated.")
        }
        await treeSync?.clearPersistence()
        for batch in local.mutationQueue.batches + local.queuesByUser.values.flatMap(\.batches) {
            completeWrite(batch.id, .rejected(FiregateError(.cancelled, "The write was cleared with the persistence.")))
        }
        local.forgetCache()
        local.clearStorage(includingSettings: false)
        backend.operations.record(.client(client: id, action: "persistenceCleared"))
        timeline.lifecycle("persistenceCleared")
    }

    /// DELETE /clients/{id} (or a reset of the emulator, whose `reason` its listeners receive):
    /// the client is gone; so is what it persisted.
    func shutdown(reason: FiregateError? = nil) async {
        await treeSync?.shutdown(reason: reason)
        heartbeat.stop()
        endListeners(with: reason)
        stopWatch()
        gcScheduler?.cancel(self)
        terminated = true
        local.clearStorage(includingSettings: true)
        backend.operations.record(.client(client: id, action: "deleted"))
        backend.timelines.close(TimelineLane.clientID(id), action: "deleted")
    }
}
