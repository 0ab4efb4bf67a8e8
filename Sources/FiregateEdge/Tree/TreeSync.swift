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
        /// Who the client is to the rules when it sends a write or opens a listen.
        public var identity: CallIdentity = .unauthenticated

        public init(online: Bool = true, holdWatch: Bool = false, holdWrites: Bool = false, writesPaused: Bool = false,
                    identity: CallIdentity = .unauthenticated) {
            self.online = online
            self.holdWatch = holdWatch
            self.holdWrites = holdWrites
            self.writesPaused = writesPaused
            self.identity = identity
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
    var writeStates = WriteOutcomes<TreeWriteState>()
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
            for write in writes.writes { writeStates.pending(write.id, .pending) }
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
    /// The client's clock: the server's plus the configured offset.
    /// The client's lane of the timeline (docs/timeline.md).
    var timeline: TimelineRecorder { backend.timelines.recorder(TimelineLane.clientID(clientID)) }

    func nowMillis() -> Int64 { backend.clock.nowMicros() / 1000 + clockOffsetMs }

    /// The SDK's estimate of the server's clock: its own clock plus `.info/serverTimeOffset`
    /// (handshake `ts` − local now), which resolves offline server timestamps and makes push ids
    /// (docs/wire/realtime-database.md: Server values, `.info`).
    func serverTimeMillis() -> Int64 { nowMillis() + info.serverTimeOffsetMs }

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
        info.serverTimeOffsetMs = -clockOffsetMs
    }

    /// The first tree call of an app run: the connection opens if the network allows it.
    func begin() {
        guard !started else { return }
        started = true
        info.serverTimeOffsetMs = -clockOffsetMs
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
}

extension TreeSync {
    /// `gates:releaseWatch`: what the held watch gate kept, as one operation.
    public func releaseHeldWatch() { releaseWatch() }

    /// Whether the owner's auth pause differs from the link's (a token expired since).
    func writesPausedChanged(_ paused: Bool) -> Bool { link.writesPaused != paused }
}
