import FiregateBackend
import FiregateModel
import FiregateStore

/// Sends an edge client's batch to the owner of its database as a REST commit (docs/replicas.md).
/// It carries the client's identity as a bearer token, so the owner judges it by the rules as
/// the client's own, and the batch's `QueuedWriteReceipt` with the epoch this replica runs the
/// client at: the owner commits it once, and answers a batch sent again (its answer lost, or
/// this replica dead and the queue restored on another) from what it stored with the commit.
struct OwnerCommitSender: RemoteCommitSender {
    let forwarding: OwnerForwarding

    func commit(_ writes: [Write], in database: DatabaseID, as identity: CallIdentity,
                receipt: QueuedWriteReceipt?) async throws(FiregateError) -> CommitResult? {
        guard let target = try forwarding.target(.documents(project: database.project, database: database.database)) else { return nil }
        let answer = try await forwarding.call(.POST, FirestoreGRPCService.restURI(database, verb: "commit"),
                                               json: ["writes": .array(writes.map { $0.json(database: database) })],
                                               authorization: forwarding.admin.bearerToken(for: identity).map { "Bearer \($0)" },
                                               receipt: try forwarding.stamped(receipt), to: target)
        return try CommitResult(restJSON: answer)
    }
}

extension OwnerForwarding {
    /// `receipt` with the epoch this replica runs its client at; UNAVAILABLE when it no longer
    /// runs it (the write is the next owner's to send).
    func stamped(_ receipt: QueuedWriteReceipt?) throws(FiregateError) -> QueuedWriteReceipt? {
        guard var receipt else { return nil }
        guard let epoch = directory.clientEpoch(receipt.client) else {
            throw FiregateError(.unavailable, "Edge client \(receipt.client) no longer runs on replica \(directory.replicaID); its write was not sent.")
        }
        receipt.epoch = epoch
        return receipt
    }
}
