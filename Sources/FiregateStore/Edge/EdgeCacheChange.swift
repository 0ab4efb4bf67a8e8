import FiregateModel

/// One change to a persistent edge client's stored cache, as data, so that each store (SQLite,
/// PostgreSQL) writes it its own way. Paths and queries are canonical strings; JSON bodies are
/// already encoded.
public enum EdgeCacheChange: Sendable {
    // The documents side (`EdgeCacheStorage`).
    case settings(json: [UInt8])
    case document(path: String, found: Bool, committed: Bool, fields: [UInt8]?, createUs: Int64, updateUs: Int64, sequence: Int64)
    case documentSequence(path: String, sequence: Int64)
    case deleteDocuments([String])
    case mutation(batchID: Int64, localWriteUs: Int64, writes: [UInt8], uid: String)
    case deleteMutation(batchID: Int64)
    /// A target and exactly its keys, replacing what was stored for its query.
    case target(EdgeCacheStorage.StoredTarget)
    /// Where a target stands, and the keys that joined or left it; `documents` (all its keys)
    /// are written only if the target has no row yet.
    case targetPosition(EdgeCacheStorage.StoredTarget.Position, joined: [String], left: [String], documents: @Sendable () -> [ResourcePath])
    case indexes(json: [UInt8])
    case bundles(json: [UInt8])
    case deleteTargets([String])
    case clear(includingSettings: Bool)
    // The tree side (`TreeCacheStorage`).
    case treeCache([TreeStorageOperation])
    case treeQuery(TreeCacheStorage.StoredQuery)
    case deleteTreeQueries([Int64])
    case treeWrite(id: Int64, body: [UInt8])
    case deleteTreeWrite(id: Int64)
    /// The client's auth record; nil removes it.
    case auth(json: [UInt8]?)
    case clearTree(includingAuth: Bool)
}

/// Where persistent edge clients keep their caches: the SQLite store by default, PostgreSQL
/// with `--store`. Changes are queued in order with the backend's own commits, so a batch saved
/// to a client's queue is on disk before the commit that removes it.
public protocol EdgeCacheStore: Sendable {
    /// Everything stored for `client`'s documents side, or nil if it was never saved.
    func loadEdgeCache(client: String) throws -> EdgeCacheStorage.Snapshot?
    /// Everything stored for `client`'s tree side.
    func loadTreeCache(client: String) throws -> TreeCacheStorage.Snapshot
    /// Queues `changes` (applied in order, in one transaction); `onDurable` reports when they
    /// are on disk, or that they failed.
    func enqueue(_ changes: [EdgeCacheChange], client: String, onDurable: (@Sendable (Result<Void, any Error>) -> Void)?)
    /// Replaces everything stored for `client` (an imported client), durably.
    func replace(client: String, edge: EdgeCacheStorage.Snapshot) async throws
    func replace(client: String, tree: TreeCacheStorage.Snapshot) async throws
    /// Returns once everything queued so far is on disk.
    func flush() async throws
    /// The removal of a queued batch, to run in the transaction of the backend commit that
    /// applies it: after a crash the batch is either committed and gone from the queue, or
    /// neither — never sent twice.
    func mutationRemoval(client: String, batchID: Int64) -> any CommitCompanion
}

extension EdgeCacheStore {
    /// Queues changes and waits until they are durable.
    func commit(_ changes: [EdgeCacheChange], client: String) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enqueue(changes, client: client) { continuation.resume(with: $0) }
        }
    }
}
