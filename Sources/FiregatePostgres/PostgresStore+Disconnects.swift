import FiregateModel
import FiregateStore
import Foundation
import PostgresNIO

/// onDisconnect operations that outlive their replica (`fg_ondisconnect`, DESIGN §1.8): each
/// open connection's registered operations are kept in the store as they change; when a replica
/// dies, the first live replica to renew after its heartbeat is a lease old claims them (one
/// UPDATE … RETURNING that makes the rows its own, so one replica gets each set) and runs them,
/// keeping what is left to run as it goes. A claimer that dies in turn leaves the rest in the
/// store under its own name, for the next live replica to claim: nothing is lost, and at most
/// the operation under way when it died runs twice.
extension PostgresStore {
    public func keepOnDisconnect(connection: String, namespace: String, operations: [UInt8]?) {
        disconnectKeeping.async { [self] in
            do {
                try readOnce { session throws(FiregateError) in
                    if let operations {
                        try session.query("""
                            INSERT INTO fg_ondisconnect (replica, connection, namespace, operations)
                            VALUES (\(replicaID), \(connection), \(namespace), \(ByteBuffer(bytes: operations)))
                            ON CONFLICT (replica, connection) DO UPDATE SET namespace = excluded.namespace, operations = excluded.operations
                            """)
                    } else {
                        try session.query("DELETE FROM fg_ondisconnect WHERE replica = \(replicaID) AND connection = \(connection)")
                    }
                }
            } catch {
                logger.warning("Keeping onDisconnect operations in PostgreSQL failed: \(error)")
            }
        }
    }

    public func onOrphanedDisconnects(_ run: @escaping @Sendable (_ namespace: String, _ connection: String, _ operations: [UInt8]) -> Void) {
        orphanedDisconnects.withLock { $0 = run }
    }

    /// At each renewal: claims the operations of dead replicas' connections (they become this
    /// replica's, under a connection key of their own) and runs them; `keepOnDisconnect` with
    /// that key records what is left, and removes the row once all ran.
    func reapOrphanedDisconnects(_ session: PostgresSession) throws(FiregateError) {
        guard let run = orphanedDisconnects.withLock({ $0 }) else { return }
        let rows = try session.query("""
            UPDATE fg_ondisconnect o SET replica = \(replicaID),
                connection = o.replica || '/' || o.connection || '/' || md5(random()::text)
            WHERE o.replica <> \(replicaID) AND NOT EXISTS (
                SELECT 1 FROM fg_replicas r
                WHERE r.replica = o.replica AND r.heartbeat_at > now() - make_interval(secs => \(Double(leaseSeconds))))
            RETURNING connection, namespace, operations
            """).rows
        for row in rows {
            let (connection, namespace, operations) = try decode(row, (String, String, ByteBuffer).self)
            run(namespace, connection, Array(operations.readableBytesView))
        }
    }
}
