import FiregateModel
import Foundation

/// What one commit changes on disk for one database.
public struct DocumentPersistBatch: Sendable {
    public let database: DatabaseID
    public let upserts: [Document]
    public let deletes: [ResourcePath]
    /// What the changed documents were before the commit (those that existed): a shared store's
    /// log keeps them, so a replica that loads the database later can undo its commits as the
    /// writer could (read times, resume tokens).
    public let befores: [Document]
    /// Work of another component to make durable in the same transaction (see `CommitCompanion`).
    public let companion: (any CommitCompanion)?
    /// The commit's time (a commit log records it; nil for a batch that changes no document).
    public let commitTime: Timestamp?
    /// An edge client's queued batch sent from another replica, stored with the commit or the
    /// commit is not made (see `QueuedWriteReceipt`; a store of one process never gets one).
    public let receipt: QueuedWriteReceipt?

    public init(database: DatabaseID, upserts: [Document], deletes: [ResourcePath], companion: (any CommitCompanion)? = nil,
                commitTime: Timestamp? = nil, receipt: QueuedWriteReceipt? = nil, befores: [Document] = []) {
        self.database = database
        self.upserts = upserts
        self.deletes = deletes
        self.befores = befores
        self.companion = companion
        self.commitTime = commitTime
        self.receipt = receipt
    }
}

/// The narrow durability protocol of the document backend: SQLite today, PostgreSQL later.
///
/// `enqueue` is called under the database's lock, so implementations must only queue;
/// `onDurable` must be called in enqueue order, once the batch is durable or has failed. A
/// batch's `companion` runs in the batch's own transaction, or the batch fails.
public protocol DocumentStorage: Sendable {
    /// Every stored document of every database, for loading at start.
    func loadAll() throws -> [(DatabaseID, Document)]
    func enqueue(_ batch: DocumentPersistBatch, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void)
    /// Queues the removal of every document of a database, ordered with the batches.
    func enqueueClear(_ database: DatabaseID, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void)
    /// Queues a read of every stored document of a database, ordered after the batches queued
    /// so far (recovery after a failed batch). `completion` is never called from within this
    /// call, so a caller may hold its lock while queueing.
    func enqueueLoad(_ database: DatabaseID, completion: @escaping @Sendable (Result<[Document], any Error>) -> Void)
    func loadDatabase(_ id: DatabaseID) throws -> [Document]
    func follow(_ apply: @escaping @Sendable (DatabaseID, ReplicatedDocumentChange) -> Void)
    func position(_ id: DatabaseID) -> LogPosition?
    /// On a shared store, the logged commits of a database up to `seq` that can be undone (the
    /// log's window since the last clear, each with its before-images), oldest first. A logged
    /// version that `current` has (same path and update time) is that very value, not a copy.
    func loggedCommits(_ id: DatabaseID, through seq: Int64, current: (ResourcePath) -> Document?) -> [LoggedDocumentCommit]
    func writeRefusal(_ id: DatabaseID) -> FiregateError?
}

/// A commit another replica made to a database this one holds in memory, as the store's log
/// gives it (docs/replicas.md), with its place in the log.
public enum ReplicatedDocumentChange: Sendable {
    case commit(upserts: [Document], deletes: [ResourcePath], commitTime: Timestamp, seq: Int64)
    /// The database was cleared: a new generation starts at this position.
    case clear(LogPosition)
    /// The follower fell behind what the log keeps: these are the documents at this position.
    case reload([Document], LogPosition)
}

/// A commit as a shared store's log keeps it: its documents after and before it.
public struct LoggedDocumentCommit: Sendable {
    public var seq: Int64
    public var commitTime: Timestamp
    public var upserts: [Document]
    public var deletes: [ResourcePath]
    /// The changed documents as they were before (those that existed).
    public var befores: [Document]

    public init(seq: Int64, commitTime: Timestamp, upserts: [Document], deletes: [ResourcePath], befores: [Document]) {
        self.seq = seq
        self.commitTime = commitTime
        self.upserts = upserts
        self.deletes = deletes
        self.befores = befores
    }
}

/// A place in a shared store's commit log: the database's generation (new at each clear) and
/// the `seq` of a commit in it. Resume tokens are made of it, so that every replica reads them
/// the same way.
public struct LogPosition: Sendable, Equatable {
    public var generation: String
    public var seq: Int64

    public init(generation: String, seq: Int64) {
        self.generation = generation
        self.seq = seq
    }
}

/// What only a store shared by several replicas does; a store of one process (SQLite, memory)
/// has nothing to add.
extension DocumentStorage {
    /// The stored documents of a database first used after the start (another replica may have
    /// written it meanwhile). A store of one process loaded everything at start: none.
    public func loadDatabase(_ id: DatabaseID) throws -> [Document] { [] }
    /// Calls `apply`, in log order per database, with the commits other replicas make to the
    /// databases this replica has in memory but does not own.
    public func follow(_ apply: @escaping @Sendable (DatabaseID, ReplicatedDocumentChange) -> Void) {}
    /// A store of one process keeps no log: its memory holds the history of this run.
    public func loggedCommits(_ id: DatabaseID, through seq: Int64, current: (ResourcePath) -> Document?) -> [LoggedDocumentCommit] { [] }
    /// Where in the shared log the database's memory stands (after a load, a commit, or a
    /// followed commit); nil for a store of one process, whose positions are the process's own.
    public func position(_ id: DatabaseID) -> LogPosition? { nil }
    /// Why this replica may not commit to the database now (another live replica owns it);
    /// nil when it may. Asks the store only when this replica holds no lease on it.
    public func writeRefusal(_ id: DatabaseID) -> FiregateError? { nil }
}

/// Keeps nothing (`--in-memory`): every batch is "durable" at once.
public struct MemoryDocumentStorage: DocumentStorage {
    public init() {}
    public func loadAll() throws -> [(DatabaseID, Document)] { [] }
    public func enqueue(_ batch: DocumentPersistBatch, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        batch.companion?.enqueueAlone()
        onDurable(.success(()))
    }
    public func enqueueClear(_ database: DatabaseID, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        onDurable(.success(()))
    }
    /// Nothing is stored: batches never fail here, so this is never needed; it answers empty.
    public func enqueueLoad(_ database: DatabaseID, completion: @escaping @Sendable (Result<[Document], any Error>) -> Void) {
        DispatchQueue.global().async { completion(.success([])) }
    }
}
