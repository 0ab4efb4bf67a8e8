import FiregateModel
import FiregateStore
import Foundation
import PostgresNIO

/// onDisconnect operations that outlive their replica (`fg_ondisconnect`, docs/replicas.md): each
/// open connection's registered operations are kept in the store as they change; when a replica
/// dies, the first live replica to renew after its heartbeat is a lease old claims them (one
/// UPDATE … RETURNING that makes the rows its own, so one replica gets each set) and runs them.
/// Each operation's write stores the claimer's progress (`done`) in its own transaction
/// (`DisconnectProgress`), so a claimer that dies leaves exactly the rest to the next.
extension PostgresStore {
    public func keepOnDisconnect(connection: String, namespace: String, operations: [UInt8]?) {
        disconnectKeeping.async { [self] in
            do {
                _ = try readOnce { session throws(FiregateError) in
                    if let operations {
                        try session.query("""
                            INSERT INTO fg_ondisconnect (replica, connection, namespace, operations)
                            VALUES (\(replicaID), \(connection), \(namespace), \(ByteBuffer(bytes: operations)))
                            ON CONFLICT (replica, connection) DO UPDATE SET namespace = excluded.namespace, operations = excluded.operations, done = 0
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

    public func onOrphanedDisconnects(_ run: @escaping @Sendable (OrphanedDisconnect) -> Void) {
        orphanedDisconnects.withLock { $0 = run }
    }

    public func recordDisconnectProgress(_ progress: DisconnectProgress) {
        disconnectKeeping.async { [self] in
            do {
                _ = try readOnce { session throws(FiregateError) in try session.query(Self.statement(progress)) }
            } catch {
                logger.warning("Recording onDisconnect progress in PostgreSQL failed: \(error)")
            }
        }
    }

    /// The statement that records `progress`: forward only, and the row goes once all ran.
    static func statement(_ progress: DisconnectProgress) -> PostgresQuery {
        if progress.done >= progress.total {
            return "DELETE FROM fg_ondisconnect WHERE replica = \(progress.replica) AND connection = \(progress.connection)"
        }
        return """
            UPDATE fg_ondisconnect SET done = greatest(done, \(progress.done))
            WHERE replica = \(progress.replica) AND connection = \(progress.connection)
            """
    }

    /// The statement a reaper's write carries: it records `progress` only while the claim is
    /// still the reaper's and the operation has not run (a row, returned); none returned, the
    /// write is not made. A reaper paused past its heartbeat, whose rows another claimed since,
    /// so runs nothing twice.
    static func checkedStatement(_ progress: DisconnectProgress) -> PostgresQuery {
        if progress.done >= progress.total {
            return """
                DELETE FROM fg_ondisconnect WHERE replica = \(progress.replica) AND connection = \(progress.connection)
                    AND done < \(progress.done) RETURNING 1
                """
        }
        return """
            UPDATE fg_ondisconnect SET done = \(progress.done)
            WHERE replica = \(progress.replica) AND connection = \(progress.connection) AND done < \(progress.done) RETURNING 1
            """
    }

    public func disconnectClaim(connection: String) throws(FiregateError) -> Int? {
        try readOnce { session throws(FiregateError) -> Int? in
            guard let row = try session.query("""
                SELECT done FROM fg_ondisconnect WHERE replica = \(replicaID) AND connection = \(connection)
                """).rows.first else { return nil }
            let done: Int32 = try decode(row, Int32.self)
            return Int(done)
        }
    }

    /// At each renewal: claims the operations of dead replicas' connections (they become this
    /// replica's, under a connection key of their own) and runs them from where the last
    /// claimer stopped.
    func reapOrphanedDisconnects(_ session: PostgresSession) throws(FiregateError) {
        guard let run = orphanedDisconnects.withLock({ $0 }) else { return }
        let rows = try session.query("""
            UPDATE fg_ondisconnect o SET replica = \(replicaID),
                connection = o.replica || '/' || o.connection || '/' || md5(random()::text)
            WHERE o.replica <> \(replicaID) AND NOT EXISTS (
                SELECT 1 FROM fg_replicas r
                WHERE r.replica = o.replica AND r.heartbeat_at > now() - make_interval(secs => \(Double(leaseSeconds))))
            RETURNING connection, namespace, operations, done
            """).rows
        for row in rows {
            let (connection, namespace, operations, done) = try decode(row, (String, String, ByteBuffer, Int32).self)
            run(OrphanedDisconnect(namespace: namespace, connection: connection, operations: Array(operations.readableBytesView), done: Int(done)))
        }
    }
}
