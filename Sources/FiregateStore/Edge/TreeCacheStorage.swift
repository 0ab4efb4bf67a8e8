import FiregateModel

/// One persistent edge client's tree cache on disk, as the SDK's LevelDB persistence keeps
/// it: server-cache rows (the backend's row encoding), tracked queries, and the queue of
/// unacknowledged writes stored unresolved, in the backend's `EdgeCacheStore`. Cache writes
/// are queued without blocking; a queued write is durable before the app is told about it.
public struct TreeCacheStorage: Sendable {
    let store: any EdgeCacheStore
    let clientID: String

    public init(store: any EdgeCacheStore, clientID: String) {
        self.store = store
        self.clientID = clientID
    }

    /// A tracked query as stored.
    public struct StoredQuery: Sendable, Equatable {
        public var id: Int64
        public var path: String
        public var parameters: String
        public var lastUse: Int64
        public var complete: Bool
        public var active: Bool
        public var keys: [String]

        public init(id: Int64, path: String, parameters: String, lastUse: Int64, complete: Bool, active: Bool, keys: [String]) {
            self.id = id
            self.path = path
            self.parameters = parameters
            self.lastUse = lastUse
            self.complete = complete
            self.active = active
            self.keys = keys
        }
    }

    /// Everything stored for one client's tree.
    public struct Snapshot: Sendable {
        public init() {}

        public var rows: [TreeStorageRow] = []
        public var queries: [StoredQuery] = []
        /// Queued writes in id order, as stored.
        public var writes: [JSON] = []
        public var auth: JSON?

        public var isEmpty: Bool { rows.isEmpty && queries.isEmpty && writes.isEmpty && auth == nil }
    }

    public func load() throws -> Snapshot { try store.loadTreeCache(client: clientID) }

    /// Applies server-cache row changes (in order, not waiting).
    public func applyCache(_ operations: [TreeStorageOperation]) {
        guard !operations.isEmpty else { return }
        enqueue(.treeCache(operations))
    }

    public func saveQuery(_ query: StoredQuery) { enqueue(.treeQuery(query)) }

    public func deleteQueries(_ ids: [Int64]) { enqueue(.deleteTreeQueries(ids)) }

    /// Stores a queued write and returns once it is durable.
    public func saveWrite(id writeID: Int64, body: JSON) async throws {
        try await store.commit([.treeWrite(id: writeID, body: JSONWriter.bytes(body))], client: clientID)
    }

    public func deleteWrite(id writeID: Int64) { enqueue(.deleteTreeWrite(id: writeID)) }

    public func saveAuth(_ body: JSON?) { enqueue(.auth(json: body.map { JSONWriter.bytes($0) })) }

    /// Removes the tree cache and queue; the auth record too when deleting the client.
    public func clear(includingAuth: Bool) { enqueue(.clearTree(includingAuth: includingAuth)) }

    /// Replaces everything stored for this client's tree with `snapshot` (an imported
    /// client), durably.
    public func save(_ snapshot: Snapshot) async throws { try await store.replace(client: clientID, tree: snapshot) }

    /// A stored query's keys as the stores keep them: a sorted JSON array.
    public static func keysJSON(_ keys: [String]) -> [UInt8] { JSONWriter.bytes(.array(keys.sorted().map { .string($0) })) }

    private func enqueue(_ change: EdgeCacheChange) { store.enqueue([change], client: clientID, onDurable: nil) }
}
