import FiregateModel
import Foundation

/// One persistent edge client's cache on disk: its settings, remote documents, targets and
/// queued mutations, in the backend's `EdgeCacheStore` (SQLite, or PostgreSQL with `--store`).
/// Writes are queued in order with the backend's commits and never block the caller.
public struct EdgeCacheStorage: Sendable {
    let store: any EdgeCacheStore
    let clientID: String

    public init(store: any EdgeCacheStore, clientID: String) {
        self.store = store
        self.clientID = clientID
    }

    /// A cached remote document: found (with fields) or known missing (at `updateTime`), and
    /// its LRU sequence number.
    public struct StoredDocument: Sendable, Equatable {
        public var path: ResourcePath
        public var found: Bool
        /// A version derived from the client's own acknowledged write, not yet confirmed by watch.
        public var committed: Bool
        public var fields: [String: Value]
        public var createTime: Timestamp
        public var updateTime: Timestamp
        public var sequenceNumber: Int64

        public init(path: ResourcePath, found: Bool, committed: Bool, fields: [String: Value], createTime: Timestamp,
                    updateTime: Timestamp, sequenceNumber: Int64) {
            self.path = path
            self.found = found
            self.committed = committed
            self.fields = fields
            self.createTime = createTime
            self.updateTime = updateTime
            self.sequenceNumber = sequenceNumber
        }
    }

    /// A query's target: its LRU sequence number, whether it has a server result, the
    /// documents of that result, its target id and the resume token of its last snapshot.
    public struct StoredTarget: Sendable, Equatable {
        /// A target's fields without its document keys.
        public struct Position: Sendable {
            public var query: String
            public var sequenceNumber: Int64
            public var synced: Bool
            public var targetID: Int
            public var resumeToken: String
            public var snapshotVersion: Timestamp

            public init(query: String, sequenceNumber: Int64, synced: Bool, targetID: Int, resumeToken: String, snapshotVersion: Timestamp) {
                self.query = query
                self.sequenceNumber = sequenceNumber
                self.synced = synced
                self.targetID = targetID
                self.resumeToken = resumeToken
                self.snapshotVersion = snapshotVersion
            }
        }

        public var query: String
        public var sequenceNumber: Int64
        public var synced: Bool
        public var documents: [ResourcePath]
        public var targetID: Int
        public var resumeToken: String
        public var snapshotVersion: Timestamp

        public init(query: String, sequenceNumber: Int64, synced: Bool, documents: [ResourcePath], targetID: Int = 0, resumeToken: String = "",
                    snapshotVersion: Timestamp = .zero) {
            self.query = query
            self.sequenceNumber = sequenceNumber
            self.synced = synced
            self.documents = documents
            self.targetID = targetID
            self.resumeToken = resumeToken
            self.snapshotVersion = snapshotVersion
        }
    }

    /// Everything persisted for one client.
    public struct Snapshot: Sendable {
        public var settings: JSON
        public var documents: [StoredDocument]
        /// Queued write batches: id, local write time, the writes as a JSON array.
        public var mutations: [(Int64, Timestamp, JSON)]
        /// The user of each batch made while signed in (absent: signed out).
        public var mutationUsers: [Int64: String] = [:]
        public var targets: [StoredTarget]
        /// The local index definitions (an array in the Firebase CLI's format), if any.
        public var indexes: JSON?
        /// The bundle cache (loaded bundles, named queries), if any.
        public var bundles: JSON?

        public init(settings: JSON, documents: [StoredDocument] = [], mutations: [(Int64, Timestamp, JSON)] = [], targets: [StoredTarget] = [],
                    indexes: JSON? = nil) {
            self.settings = settings
            self.documents = documents
            self.mutations = mutations
            self.targets = targets
            self.indexes = indexes
        }
    }

    static func path(_ text: String) -> ResourcePath { ResourcePath(text.split(separator: "/").map(String.init)) }

    /// Everything persisted for this client, or nil if it was never saved.
    public func load() throws -> Snapshot? { try store.loadEdgeCache(client: clientID) }

    public func saveSettings(_ settings: JSON) { enqueue(.settings(json: JSONWriter.bytes(settings))) }

    public func saveDocument(_ path: ResourcePath, found: Document?, committed: Bool, version: Timestamp, sequenceNumber: Int64) {
        enqueue(.document(path: path.canonical, found: found != nil, committed: committed, fields: found.map { JSONWriter.bytes(Value.fieldsJSON($0.fields)) },
                          createUs: found?.createTime.microseconds ?? 0, updateUs: found?.updateTime.microseconds ?? version.microseconds,
                          sequence: sequenceNumber))
    }

    /// Records when a cached document was last referenced.
    public func saveDocumentSequence(_ path: ResourcePath, _ sequenceNumber: Int64) {
        enqueue(.documentSequence(path: path.canonical, sequence: sequenceNumber))
    }

    /// Drops documents from the cache (garbage collection).
    public func deleteDocuments(_ paths: [ResourcePath]) { enqueue(.deleteDocuments(paths.map(\.canonical))) }

    /// Queues the save of a write batch before returning, so it reaches the disk before any
    /// commit queued later removes it; `onDurable` reports when it is there (a write the app was
    /// told about survives a crash) or that it failed.
    public func saveMutation(id batchID: Int64, localWriteTime: Timestamp, writes: JSON, uid: String = "",
                             onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        store.enqueue([.mutation(batchID: batchID, localWriteUs: localWriteTime.microseconds, writes: JSONWriter.bytes(writes), uid: uid)],
                      client: clientID, onDurable: onDurable)
    }

    public func deleteMutation(id batchID: Int64) { enqueue(.deleteMutation(batchID: batchID)) }

    /// The removal of a queued batch, to run in the transaction of the backend commit that
    /// applies it: a crash then leaves the batch either committed and gone from the queue, or
    /// neither — never sent twice after a restart.
    public func mutationRemoval(id batchID: Int64) -> any CommitCompanion { store.mutationRemoval(client: clientID, batchID: batchID) }

    public func saveTarget(_ target: StoredTarget) { enqueue(.target(target)) }

    /// Saves where a stored target stands (its sequence, sync state and resume position) and
    /// the keys that `joined` or `left` its result since it was last saved: the change, not the
    /// whole result. `documents` (all its keys) are written only if the target has no row yet.
    public func saveTargetPosition(_ target: StoredTarget.Position, joined: [ResourcePath] = [], left: [ResourcePath] = [],
                                   documents: @escaping @Sendable () -> [ResourcePath]) {
        enqueue(.targetPosition(target, joined: joined.map(\.canonical), left: left.map(\.canonical), documents: documents))
    }

    /// Saves the local index definitions (replacing earlier ones).
    public func saveIndexes(_ definitions: JSON) { enqueue(.indexes(json: JSONWriter.bytes(definitions))) }

    /// Saves the bundle cache (replacing the earlier one).
    public func saveBundles(_ state: JSON) { enqueue(.bundles(json: JSONWriter.bytes(state))) }

    public func deleteTargets(_ queries: [String]) { enqueue(.deleteTargets(queries)) }

    /// Removes the cache and the queue (clearPersistence); `settings` too when deleting the client.
    public func clear(includingSettings: Bool) { enqueue(.clear(includingSettings: includingSettings)) }

    /// Replaces everything stored for this client with `snapshot` (an imported client), durably.
    public func save(_ snapshot: Snapshot) async throws { try await store.replace(client: clientID, edge: snapshot) }

    /// Waits until everything queued so far is on disk.
    public func flush() async throws { try await store.flush() }

    private func enqueue(_ change: EdgeCacheChange) { store.enqueue([change], client: clientID, onDurable: nil) }
}
