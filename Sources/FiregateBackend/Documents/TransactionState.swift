import FiregateModel

/// A transaction the server tracks between beginTransaction and commit/rollback.
///
/// Read-write transactions are optimistic: each read records the version seen, and the commit
/// fails ABORTED when any of them changed meanwhile. Read-only ones read a fixed snapshot.
struct TransactionState: Sendable {
    let id: String
    let readOnly: Bool
    /// The snapshot time of a read-only transaction.
    let readTime: Timestamp?
    /// Update time seen per document read (nil: read as missing).
    var reads: [ResourcePath: Timestamp?] = [:]
    let startedAt: Timestamp
}
