import FiregateModel
import Synchronization

/// On replicas (docs/replicas.md), tree writes that must run at the owner of their namespace: a
/// socket's, an edge client's or an onDisconnect's, made on a replica that does not own it.
/// (REST writes are forwarded as they came, before they reach the backend.) The HTTP layer,
/// which reaches other replicas, installs the sender.
public protocol RemoteTreeWriteSender: Sendable {
    /// The owner's outcome when another replica owns `namespace`; nil to write here. The owner
    /// judges the write by its rules as `caller`'s own.
    func write(namespace: String, _ request: TreeWriteRequest, as caller: RulesCaller) async throws(FiregateError) -> TreeWriteOutcome?
}

/// Where the tree finds the sender (none on a store of one process).
public final class RemoteTreeWrites: Sendable {
    private let sender = Mutex<(any RemoteTreeWriteSender)?>(nil)

    public init() {}

    public func install(_ sender: any RemoteTreeWriteSender) { self.sender.withLock { $0 = sender } }

    /// The owner's outcome, or nil to write here.
    func write(namespace: String, _ request: TreeWriteRequest, as caller: RulesCaller) async throws(FiregateError) -> TreeWriteOutcome? {
        guard let sender = sender.withLock({ $0 }) else { return nil }
        return try await sender.write(namespace: namespace, request, as: caller)
    }
}
