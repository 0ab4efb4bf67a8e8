import FiregateBackend
import FiregateModel
import FiregateStore

/// One edge client's Realtime Database side — the SDK's Repo with disk persistence: a tree
/// cache of what the server sent (tracked queries say what is complete), pending writes laid
/// over it, views raising SDK events, onDisconnect operations, `.info`, and the connection
/// to the backend that the client's network switch cuts.
///
/// Everything the backend sends arrives through one ordered input stream (listen data, then
/// write acknowledgements), so views see server data and acks in the order the server made
/// them, and a held watch gate can hold them and deliver them as one operation.
public actor TreeSync {
    /// What the owning client decides: its network switch, test gates and auth pause.
    public struct Link: Sendable, Equatable {
        public var online = true
        public var holdWatch = false
        public var holdWrites = false
        public var writesPaused = false

        public init(online: Bool = true, holdWatch: Bool = false, holdWrites: Bool = false, writesPaused: Bool = false) {
            self.online = online
            self.holdWatch = holdWatch
            self.holdWrites = holdWrites
            self.writesPaused = writesPaused
        }
    }

    /// What reaches the client from the backend, in order.
    enum Input: Sendable {
        case frame(TreeQuerySpec, generation: Int, TreeStreamFrame)
        case acknowledged(Int64, TreeAcknowledgement)
        case failed(Int64, FiregateError)
        case marker(CheckedContinuation<Void, Never>)
    }

    /// A server listen: the backend stream for one spec, and for a filtering spec the
    /// result it last described.
    struct ServerListen {
        let generation: Int
        var subscription: TreeStreamSubscription?
        var result = TreeNode.empty
        var hasData = false
    }

    public let clientID: String
    let backend: Backend
    let storage: TreeCacheStorage?
    var namespace: String
    var persistent: Bool
    var clockOffsetMs: Int64
    var cacheSizeBytes: Int64 = 10 * 1024 * 1024
    /// Server-cache writes since the last prune check.
    var serverWritesSinceCheck = 0

    var link = Link()
    var started = false
    var connected = false
    var info = TreeInfo()
    var cache = TreeServerCache()
    var writes = TreeWriteTree()
    var writeStates: [Int64: TreeWriteState] = [:]
    var nextWriteID: Int64 = 1
    var views = TreeViews()
    var listens: [TreeQuerySpec: ServerListen] = [:]
    var nextGeneration = 0
    /// Listens being opened: their first data is queued once these finish.
    var opening: [Int: Task<Void, Never>] = [:]
    let inputs: AsyncStream<Input>.Continuation
    var held: [Input] = []
    var onDisconnect = OnDisconnectList()
    /// The server carrying out onDisconnect operations; anything sent after a reconnect waits for it.
    var disconnectWork: Task<Void, Never>?
    var sending = false
    var ackWaiters: [Int64: [CheckedContinuation<TreeWriteState, Never>]] = [:]
    var pushIDs = PushIDGenerator()

    init(clientID: String, backend: Backend, storage: TreeCacheStorage?, namespace: String, persistent: Bool, clockOffsetMs: Int64,
         cacheSizeBytes: Int64, link: Link, restoring snapshot: TreeCacheStorage.Snapshot?) {
        self.clientID = clientID
        self.backend = backend
        self.storage = storage
        self.namespace = namespace
        self.persistent = persistent
        self.clockOffsetMs = clockOffsetMs
        self.cacheSizeBytes = cacheSizeBytes
        self.link = link
        let (stream, continuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        inputs = continuation
        if let snapshot {
            (cache, writes, nextWriteID) = TreeSync.restored(snapshot, nowMillis: backend.clock.nowMicros() / 1000 + clockOffsetMs)
            for write in writes.writes { writeStates[write.id] = .pending }
        }
        Task { [weak self] in
            for await input in stream {
                guard let self else { return }
                await self.receive(input)
            }
        }
    }

    deinit { inputs.finish() }

    /// The client's clock in milliseconds: the server clock plus the configured offset.
    func nowMillis() -> Int64 { backend.clock.nowMicros() / 1000 + clockOffsetMs }

    /// The cache, queued writes and next write id a persistent client stored. Writes load in
    /// id order and resolve their values again now, as the SDK replays them at start.
    static func restored(_ snapshot: TreeCacheStorage.Snapshot, nowMillis: Int64) -> (TreeServerCache, TreeWriteTree, Int64) {
        var tracked: [(TreeQuerySpec, TreeServerCache.TrackedQuery)] = []
        for stored in snapshot.queries {
            guard let spec = TreeQuerySpec(path: stored.path, parameters: stored.parameters) else { continue }
            tracked.append((spec, .init(id: stored.id, lastUse: stored.lastUse, complete: stored.complete, active: stored.active, keys: Set(stored.keys))))
        }
        let cache = TreeServerCache(root: TreeStorageEncoding.tree(from: snapshot.rows), tracked: tracked, now: nowMillis)
        var writes = TreeWriteTree()
        var nextID: Int64 = 1
        for body in snapshot.writes {
            guard let write = try? TreeUserWrite.restored(body, local: LocalTreeValues(cache: cache, writes: writes, nowMillis: nowMillis)) else { continue }
            writes.add(write)
            nextID = max(nextID, write.id + 1)
        }
        return (cache, writes, nextID)
    }

    /// Settings of a client that has not started yet.
    func configure(namespace: String, persistent: Bool, clockOffsetMs: Int64, cacheSizeBytes: Int64) {
        self.namespace = namespace
        self.persistent = persistent
        self.clockOffsetMs = clockOffsetMs
        self.cacheSizeBytes = cacheSizeBytes
        info.serverTimeOffsetMs = clockOffsetMs
    }

    /// The first tree call of an app run: the connection opens if the network allows it.
    func begin() {
        guard !started else { return }
        started = true
        info.serverTimeOffsetMs = clockOffsetMs
        connect()
    }

    /// The link changed: connect or drop, release what the gates held.
    public func setLink(_ new: Link) {
        let old = link
        link = new
        if old.online && !new.online { disconnect() }
        if !old.online && new.online { connect() }
        if old.holdWatch && !new.holdWatch { releaseWatch() }
        pump()
    }

    // MARK: Connection

    /// Opens the connection: `.info/connected` turns true, listens restart, queued
    /// onDisconnect operations are registered and queued writes go out.
    func connect() {
        guard started, link.online, !connected else { return }
        connected = true
        info.connected = true
        refreshViews(touching: [TreePath(keys: [TreeInfo.rootKey])])
        for spec in Set(views.keys.filter { !$0.isInfo }.map(\.spec)) where views.isActive(spec) { openListen(spec) }
        onDisconnect.registerQueued()
        pump()
    }

    /// The connection dropped (network off, restart, terminate, delete, heartbeat timeout):
    /// `.info/connected` turns false, then the registered onDisconnect operations apply
    /// locally as server data and the server carries them out — before anything the client
    /// sends after reconnecting.
    func disconnect() {
        guard connected else { return }
        connected = false
        info.connected = false
        for spec in Array(listens.keys) { closeListen(spec) }
        held.removeAll { if case .frame = $0 { true } else { false } }
        refreshViews(touching: [TreePath(keys: [TreeInfo.rootKey])])
        runOnDisconnect()
    }

    // MARK: Server listens

    func openListen(_ spec: TreeQuerySpec) {
        guard connected, listens[spec] == nil else { return }
        nextGeneration += 1
        let generation = nextGeneration
        listens[spec] = ServerListen(generation: generation)
        let inputs = self.inputs, tree = backend.tree, namespace = self.namespace
        let key = TreeStreamKey(path: spec.path, query: spec.query, format: .plain)
        opening[generation] = Task {
            let subscription = try? await tree.subscribe(namespace: namespace, key: key) { frame in
                inputs.yield(.frame(spec, generation: generation, frame))
            }
            self.attach(subscription, to: spec, generation: generation)
        }
    }

    private func attach(_ subscription: TreeStreamSubscription?, to spec: TreeQuerySpec, generation: Int) {
        opening.removeValue(forKey: generation)
        guard let subscription else { return }
        guard listens[spec]?.generation == generation else {
            let tree = backend.tree
            Task { await tree.unsubscribe(subscription) }
            return
        }
        listens[spec]?.subscription = subscription
    }

    func closeListen(_ spec: TreeQuerySpec) {
        guard let listen = listens.removeValue(forKey: spec), let subscription = listen.subscription else { return }
        let tree = backend.tree
        Task { await tree.unsubscribe(subscription) }
    }

    /// A view became active or inactive: track it, and listen while connected.
    func setActive(_ spec: TreeQuerySpec, _ active: Bool) {
        guard !spec.path.keys.starts(with: [TreeInfo.rootKey]) else { return }
        let wasActive = cache.tracked[spec]?.active ?? false
        if active != wasActive || cache.tracked[spec] == nil {
            let query = cache.setActive(spec, active, now: nowMillis())
            saveTracked(spec, query)
        }
        if active { openListen(spec) } else { closeListen(spec) }
    }

    func saveTracked(_ spec: TreeQuerySpec, _ query: TreeServerCache.TrackedQuery) {
        guard persistent, let storage else { return }
        storage.saveQuery(.init(id: query.id, path: spec.path.joined, parameters: spec.parameters, lastUse: query.lastUse,
                                complete: query.complete, active: query.active, keys: Array(query.keys)))
    }

    func saveCache(_ paths: [TreePath]) {
        guard persistent, let storage, !paths.isEmpty else { return }
        var disjoint: [TreePath] = []
        for path in paths.sorted(by: { $0.count < $1.count }) where !disjoint.contains(where: { $0.contains(path) }) {
            disjoint.append(path)
        }
        storage.applyCache(TreeStorageEncoding.operations(replacing: disjoint, in: cache.root))
    }

    // MARK: Inputs

    func receive(_ input: Input) {
        switch input {
        case .marker(let continuation):
            continuation.resume()
        case .failed:
            process([input])
        case .frame, .acknowledged:
            if link.holdWatch {
                // The write's outcome is known now; its effect on the views waits with the
                // server data the gate holds.
                if case .acknowledged(let id, let acknowledgement) = input { finish(id, .acknowledged(answer: acknowledgement.answer)) }
                held.append(input)
            } else {
                process([input])
            }
        }
    }

    /// Delivers what the watch gate held, as one operation.
    func releaseWatch() {
        let inputs = held
        held.removeAll()
        process(inputs)
    }

    /// Applies inputs to the cache and the writes, then updates every touched view once.
    func process(_ inputs: [Input]) {
        var touched: [TreePath] = []
        for input in inputs {
            switch input {
            case .frame(let spec, let generation, let frame): touched += apply(frame, for: spec, generation: generation)
            case .acknowledged(let id, let acknowledgement): touched += applyAcknowledgement(id, acknowledgement)
            case .failed(let id, let error): touched += applyFailure(id, error)
            case .marker(let continuation): continuation.resume()
            }
        }
        refreshViews(touching: touched)
    }

    /// Waits until the listens being opened have queued their first data and every input
    /// queued so far has been taken (held ones stay held).
    func drainInputs() async {
        for task in Array(opening.values) { await task.value }
        await withCheckedContinuation { continuation in inputs.yield(.marker(continuation)) }
    }

    private func apply(_ frame: TreeStreamFrame, for spec: TreeQuerySpec, generation: Int) -> [TreePath] {
        guard var listen = listens[spec], listen.generation == generation else { return [] }
        if frame.kind == .cancel {
            closeListen(spec)
            views.cancel(spec, with: FiregateError(.permissionDenied, "permission_denied at \(spec.path): Client doesn't have permission to access the desired data."))
            return []
        }
        guard let update = frame.update else { return [] }
        let now = nowMillis()
        var changed: [TreePath]
        if spec.query == nil {
            switch update {
            case .put(let relative, let node) where relative.isRoot:
                let result = cache.applyServerResult(node, for: spec, now: now)
                for query in result.queries { if let tracked = cache.tracked[query] { saveTracked(query, tracked) } }
                changed = result.paths
            case .put(let relative, let node):
                cache.applyServerValue(node, at: spec.path.appending(relative))
                changed = [spec.path.appending(relative)]
            case .patch(let relative, let entries):
                changed = entries.map { spec.path.appending(relative).appending($0.path) }
                for (entry, path) in zip(entries, changed) { cache.applyServerValue(entry.node, at: path) }
            }
        } else {
            switch update {
            case .put(let relative, let node): listen.result.set(node, at: relative)
            case .patch(let relative, let entries):
                for entry in entries { listen.result.set(entry.node, at: relative.appending(entry.path)) }
            }
            let result = cache.applyServerResult(listen.result, for: spec, now: now)
            if let tracked = cache.tracked[spec] { saveTracked(spec, tracked) }
            changed = result.paths
        }
        listen.hasData = true
        listens[spec] = listen
        saveCache(changed)
        return changed + [spec.path] + noteServerWrite()
    }

    // MARK: Pruning

    /// Counts a server-cache write; past the SDK's threshold the cache is pruned. Returns the
    /// locations whose data changed.
    func noteServerWrite() -> [TreePath] {
        serverWritesSinceCheck += 1
        guard TreeCachePruner.due(writesSinceCheck: serverWritesSinceCheck) else { return [] }
        return prune().paths
    }

    /// Prunes the tree cache to its size now (also what `:collectGarbage` does for the tree).
    public func pruneNow() -> JSON {
        let before = cache.byteSize
        let result = prune()
        refreshViews(touching: result.paths)
        return ["queriesPruned": .int(Int64(result.queries)), "bytesBefore": .int(Int64(before)), "bytesAfter": .int(Int64(cache.byteSize)),
                "cacheSizeBytes": .int(cacheSizeBytes)]
    }

    private func prune() -> (queries: Int, paths: [TreePath]) {
        serverWritesSinceCheck = 0
        let result = TreeCachePruner.prune(&cache, maxBytes: cacheSizeBytes)
        if persistent, let storage, !result.queries.isEmpty { storage.deleteQueries(result.queries.map(\.1)) }
        saveCache(result.paths)
        return (result.queries.count, result.paths)
    }

    // MARK: Views

    /// What a view shows now: server data with pending writes laid over, complete when the
    /// server data is or a pending set covers the location.
    func viewState(_ key: TreeViewKey) -> TreeViewState {
        if key.isInfo { return TreeViewState(data: info.node(at: key.path), query: key.query, complete: true) }
        let server = cache.serverData(for: key.spec)
        let data = writes.overlay(server.node, at: key.path)
        return TreeViewState(data: data, query: key.query, complete: server.complete || writes.coversCompletely(key.path))
    }

    /// Recomputes the views at, above or below any of `paths` and raises their events.
    func refreshViews(touching paths: [TreePath]) {
        guard !paths.isEmpty else { return }
        for key in Array(views.keys) where paths.contains(where: { $0.contains(key.path) || key.path.contains($0) }) {
            views.update(key, to: viewState(key))
        }
    }

    /// The value the app sees at `path` (server cache and pending writes, complete or not).
    func localValue(at path: TreePath) -> TreeNode {
        writes.overlay(cache.root.node(at: path), at: path)
    }

    // MARK: Lifecycle

    /// App restart: listeners end, the connection drops (onDisconnect runs), transactions are
    /// lost; a memory client also loses its cache and queued writes. Returns the writes lost.
    func restart() -> Int {
        views.endAll(with: nil)
        disconnect()
        started = false
        onDisconnect.removeAll()
        var lost = 0
        for write in writes.writes where write.isTransaction || !persistent {
            writes.remove(write.id)
            finish(write.id, .rejected(FiregateError(.cancelled, "The write was lost when the app restarted.")))
            lost += 1
        }
        if !persistent { cache.removeAll() } else { cache = TreeServerCache(root: cache.root, tracked: cache.tracked.map { ($0.key, $0.value) }, now: nowMillis()) }
        for i in writes.writes.map(\.id) { writes.update(i) { $0.sent = false } }
        // The restarted app replays its queue at start, as the SDK does.
        if !writes.isEmpty { begin() }
        return lost
    }

    /// terminate(): listeners end and the connection drops.
    func terminate() {
        views.endAll(with: nil)
        disconnect()
        started = false
    }

    /// The client was deleted (its connection drops: onDisconnect runs) or the emulator was
    /// reset or imported (`reason`: nothing of the old state may reappear, so it does not).
    func shutdown(reason: FiregateError?) {
        views.endAll(with: reason)
        if reason != nil { onDisconnect.removeAll() }
        disconnect()
        started = false
        for write in writes.writes { finish(write.id, .rejected(FiregateError(.cancelled, "The client was deleted."))) }
        writes.removeAll()
        cache.removeAll()
        storage?.clear(includingAuth: true)
    }

    /// clearPersistence(): the cache and the queue go.
    func clearPersistence() {
        for write in writes.writes { finish(write.id, .rejected(FiregateError(.cancelled, "The write was cleared with the persistence."))) }
        writes.removeAll()
        cache.removeAll()
        storage?.clear(includingAuth: false)
    }

    /// `gates:sync`: once everything the backend sent so far is applied (unless the watch
    /// gate holds it), every listener gets a `sync` event.
    func sync(token: String) async {
        if !link.holdWatch { await drainInputs() }
        views.broadcast(.sync(token: token))
    }

    /// The tree as a client archive holds it: the cache (export form, priorities kept), the
    /// tracked queries and the queued writes as stored (transactions are not kept, as on disk).
    func archive() -> JSON {
        [
            "cache": (try? JSONParser.parse(TreeNodeWriter.bytes(cache.root, format: .export))) ?? .null,
            "queries": .array(cache.tracked.sorted { $0.value.id < $1.value.id }.map { spec, query in
                ["path": .string(spec.path.joined), "parameters": .string(spec.parameters), "lastUse": .int(query.lastUse),
                 "complete": .bool(query.complete), "active": .bool(query.active), "keys": .array(query.keys.sorted().map { .string($0) })]
            }),
            "writes": .array(writes.writes.compactMap(\.stored)),
        ]
    }

    /// The tree part of the state of a client that never used the tree.
    static let idleState: JSON = [
        "connected": false, "pendingWrites": 0, "listeners": 0, "keepSynced": [], "onDisconnect": [],
        "cache": ["bytes": 0, "sizeBytes": 0, "trackedQueries": 0, "activeQueries": 0],
    ]

    /// The tree part of the client state.
    func state() -> JSON {
        [
            "connected": .bool(connected),
            "pendingWrites": .int(Int64(writes.count)),
            "listeners": .int(Int64(views.listenerCount)),
            "keepSynced": .array(views.keptSynced.map { .string($0.spec.description) }),
            "onDisconnect": .array(onDisconnect.operations.map(\.json)),
            "cache": [
                "bytes": .int(Int64(cache.byteSize)), "sizeBytes": .int(cacheSizeBytes),
                "trackedQueries": .int(Int64(cache.tracked.count)),
                "activeQueries": .int(Int64(cache.tracked.values.filter(\.active).count)),
            ],
        ]
    }
}

extension TreeSync {
    /// `gates:releaseWatch`: what the held watch gate kept, as one operation.
    public func releaseHeldWatch() { releaseWatch() }

    /// Whether the owner's auth pause differs from the link's (a token expired since).
    func writesPausedChanged(_ paused: Bool) -> Bool { link.writesPaused != paused }
}
