import FiregateModel
import FiregateStore
import Synchronization

/// On replicas (docs/replicas.md), commits that must run at the owner of their database: an edge
/// client's queued batches, sent by a replica that does not own the database. The HTTP layer,
/// which reaches other replicas, installs the sender.
public protocol RemoteCommitSender: Sendable {
    /// The owner's answer when another replica owns `database`; nil to commit here. The owner
    /// judges the writes with `identity`'s rules, as the caller's own, and commits them once
    /// per `receipt` (see `QueuedWriteReceipt`).
    func commit(_ writes: [Write], in database: DatabaseID, as identity: CallIdentity,
                receipt: QueuedWriteReceipt?) async throws(FiregateError) -> CommitResult?
}

/// Where the backend finds the sender (none on a store of one process).
public final class RemoteCommits: Sendable {
    private let sender = Mutex<(any RemoteCommitSender)?>(nil)

    public init() {}

    public func install(_ sender: any RemoteCommitSender) { self.sender.withLock { $0 = sender } }

    /// The owner's answer, or nil to commit here.
    public func commit(_ writes: [Write], in database: DatabaseID, as identity: CallIdentity,
                       receipt: QueuedWriteReceipt?) async throws(FiregateError) -> CommitResult? {
        guard let sender = sender.withLock({ $0 }) else { return nil }
        return try await sender.commit(writes, in: database, as: identity, receipt: receipt)
    }

    public var isInstalled: Bool { sender.withLock { $0 != nil } }
}
