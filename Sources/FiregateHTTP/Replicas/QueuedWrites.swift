import FiregateModel
import FiregateStore
import HTTPTypes
import Synchronization

/// The owner's side of an edge client's queued write sent from the client's replica
/// (`QueuedWriteReceipt`, docs/replicas.md): the write commits once, with its answer stored in the
/// commit's transaction; sent again, it is answered from what was stored. Two sends of one
/// write at once (a retry racing its first send) do not both run: the second is told to retry.
final class QueuedWrites: Sendable {
    /// The receipt's key on a forwarded request: `QueuedWriteReceipt.header`.
    static let header = HTTPField.Name("Firegate-Queued-Write")!

    private let running = Mutex<Set<QueuedWriteReceipt>>([])

    /// The receipt a request carries, taken only from another replica (the cluster secret checked).
    static func receipt(_ headers: HTTPFields, forwarding: OwnerForwarding?) throws(FiregateError) -> QueuedWriteReceipt? {
        guard let value = headers[header] else { return nil }
        guard let forwarding, try forwarding.isForwarded(headers) else {
            throw FiregateError(.permissionDenied, "Firegate-Queued-Write is sent between replicas only.")
        }
        guard let receipt = QueuedWriteReceipt(header: value) else {
            throw FiregateError(.invalidArgument, "Firegate-Queued-Write must read `<batch|tree> <id> <stamp> <epoch> <client>`.")
        }
        return receipt
    }

    /// The answer to `receipt`'s write: the stored one if it committed before, else `commit`'s
    /// (which stores it). A commit refused because a racing one stored it first answers that.
    func answer(_ receipt: QueuedWriteReceipt, directory: any ReplicaDirectory,
                commit: () async throws(FiregateError) -> JSON) async throws(FiregateError) -> JSON {
        if let stored = try directory.storedAnswer(receipt) { return try Self.parse(stored) }
        guard running.withLock({ $0.insert(receipt).inserted }) else {
            throw FiregateError(.unavailable, "Edge client \(receipt.client)'s queued write \(receipt.id) is being committed now; retry.")
        }
        defer { running.withLock { _ = $0.remove(receipt) } }
        do {
            return try await commit()
        } catch {
            if error.status == .unavailable, let stored = try? directory.storedAnswer(receipt) { return try Self.parse(stored) }
            throw error
        }
    }

    private static func parse(_ stored: [UInt8]) throws(FiregateError) -> JSON {
        do {
            return try JSONParser.parse(stored)
        } catch {
            throw .internal("A stored answer to a queued write is not JSON.")
        }
    }
}
