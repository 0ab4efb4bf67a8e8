/// Work of another component of the same store that must become durable in the same
/// transaction as one document commit, so that a crash keeps both or neither (an edge client's
/// acknowledged batch leaving its on-disk queue, for instance).
///
/// Each storage kind defines its own companion type and runs only companions of that type on
/// its own store, inside the commit's transaction; given one it cannot run atomically, it
/// fails the commit instead of running the work apart. `SQLiteDocumentStorage` runs
/// `SQLiteCommitCompanion`; a PostgreSQL storage would bring a companion that runs on its
/// connection.
public protocol CommitCompanion: Sendable {
    /// Queues the work on its own, for a storage with no durable transaction to carry it
    /// (`MemoryDocumentStorage`: nothing survives a restart, so atomicity is moot).
    func enqueueAlone()
}
