import FiregateModel
import FiregateStore
import PostgresNIO

/// Edge clients' queued writes committed for another replica (`fg_edge_receipts`, docs/replicas.md):
/// the commit that applies one removes it from the client's stored queue and stores its answer,
/// in the commit's transaction and only while the sender's epoch is the client's owner epoch
/// (`QueuedWriteReceipt`). So a write sent again — its answer lost, or its replica dead and the
/// queue restored elsewhere — is answered from the receipt instead of applied twice.
extension PostgresStore {
    public func clientEpoch(_ id: String) -> Int64? {
        ownedClients.withLock { $0[id] }
    }

    public func storedAnswer(_ receipt: QueuedWriteReceipt) throws(FiregateError) -> [UInt8]? {
        let client = PostgresText.stored(receipt.client)
        return try readOnce { session throws(FiregateError) -> [UInt8]? in
            guard let row = try session.query("""
                SELECT answer FROM fg_edge_receipts
                WHERE client_id = \(client) AND kind = \(receipt.kind.rawValue) AND id = \(receipt.id) AND stamp = \(receipt.stamp)
                """).rows.first else { return nil }
            return Array(buffer: try decode(row, ByteBuffer.self))
        }
    }

    /// The statement a queued write's commit carries: a row returned when the receipt was
    /// stored (the sender still runs the client, and the write was not committed before); none,
    /// and the write is not made.
    static func checkedStatement(_ receipt: QueuedWriteReceipt) -> PostgresQuery {
        let client = PostgresText.stored(receipt.client)
        let kind = receipt.kind.rawValue
        // The owner row is held (FOR SHARE) until the commit, as the client's cache writes hold it.
        return """
            WITH o AS (SELECT 1 FROM fg_client_owner WHERE client_id = \(client) AND epoch = \(receipt.epoch) FOR SHARE),
            r AS (INSERT INTO fg_edge_receipts (client_id, kind, id, stamp, answer)
                  SELECT \(client), \(kind), \(receipt.id), \(receipt.stamp), \(ByteBuffer(bytes: receipt.answer))
                  WHERE EXISTS (SELECT 1 FROM o) ON CONFLICT DO NOTHING RETURNING 1),
            b AS (DELETE FROM fg_edge_mutations WHERE \(kind) = 'batch' AND client_id = \(client) AND batch_id = \(receipt.id)
                  AND local_write_us = \(receipt.stamp) AND EXISTS (SELECT 1 FROM r)),
            t AS (DELETE FROM fg_edge_tree_writes WHERE \(kind) = 'tree' AND client_id = \(client) AND write_id = \(receipt.id)
                  AND EXISTS (SELECT 1 FROM r))
            SELECT 1 FROM r
            """
    }

    /// At each renewal: receipts an hour old whose write has left its client's queue. A write
    /// still queued keeps its receipt (its replica may send it again at any time).
    func pruneReceipts(_ session: PostgresSession) throws(FiregateError) {
        try session.query("""
            DELETE FROM fg_edge_receipts r WHERE r.created_at < now() - interval '1 hour'
            AND NOT EXISTS (SELECT 1 FROM fg_edge_mutations m WHERE r.kind = 'batch' AND m.client_id = r.client_id AND m.batch_id = r.id)
            AND NOT EXISTS (SELECT 1 FROM fg_edge_tree_writes w WHERE r.kind = 'tree' AND w.client_id = r.client_id AND w.write_id = r.id)
            """)
    }
}
