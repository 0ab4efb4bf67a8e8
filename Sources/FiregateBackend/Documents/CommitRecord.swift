import FiregateModel

/// One document's change in a commit: what it was and what it became (nil = missing).
public struct DocumentChange: Sendable, Equatable {
    public let path: ResourcePath
    public let before: Document?
    public let after: Document?
}

/// A committed transaction as the change feed and the read-time history see it.
public struct CommitRecord: Sendable {
    /// Position in the database's commit order, starting at 1.
    public let sequence: Int64
    public let commitTime: Timestamp
    public let changes: [DocumentChange]
}
