import FiregateModel
import FiregateStore
import PostgresNIO

/// Edge clients owned by one replica (`fg_client_owner`, docs/replicas.md): the first replica a
/// client's request reaches claims it; another takes it over only once the owner's heartbeat is
/// older than a lease (the restart path then restores it from the store).
extension PostgresStore {
    public func claimClient(_ id: String) throws(FiregateError) -> ReplicaAddress? {
        let stored = PostgresText.stored(id)
        return try readOnce { session throws(FiregateError) -> ReplicaAddress? in
            let claimed = try session.query("""
                INSERT INTO fg_client_owner AS o (client_id, replica, epoch) VALUES (\(stored), \(replicaID), 1)
                ON CONFLICT (client_id) DO UPDATE SET replica = excluded.replica, epoch = o.epoch + 1
                WHERE o.replica = excluded.replica OR NOT EXISTS (
                    SELECT 1 FROM fg_replicas r
                    WHERE r.replica = o.replica AND r.heartbeat_at > now() - make_interval(secs => \(Double(leaseSeconds))))
                RETURNING epoch
                """).rows.first
            if let claimed {
                let epoch = try decode(claimed, Int64.self)
                ownedClients.withLock { $0[id] = epoch }
                return nil
            }
            guard let row = try session.query("""
                SELECT o.replica, coalesce(r.address, '') FROM fg_client_owner o LEFT JOIN fg_replicas r ON r.replica = o.replica
                WHERE o.client_id = \(stored)
                """).rows.first else {
                throw FiregateError(.unavailable, "Edge client \(id) could not be claimed; retry.")
            }
            let (owner, address) = try decode(row, (String, String).self)
            return ReplicaAddress(id: owner, address: address)
        }
    }

    public func releaseClient(_ id: String) {
        guard ownedClients.withLock({ $0.removeValue(forKey: id) }) != nil else { return }
        let stored = PostgresText.stored(id)
        _ = try? readOnce { session throws(FiregateError) in
            try session.query("DELETE FROM fg_client_owner WHERE client_id = \(stored) AND replica = \(replicaID)")
        }
    }

    public func onClientsLost(_ lost: @escaping @Sendable ([String]) -> Void) {
        clientsLost.withLock { $0 = lost }
    }

    /// At each renewal: the owned clients another replica has taken over since.
    func checkOwnedClients(_ session: PostgresSession) throws(FiregateError) {
        let owned = ownedClients.withLock { $0 }
        guard !owned.isEmpty else { return }
        var current: [String: (String, Int64)] = [:]
        for row in try session.query("""
            SELECT client_id, replica, epoch FROM fg_client_owner WHERE client_id = ANY(\(owned.keys.map(PostgresText.stored)))
            """).rows {
            let (client, replica, epoch) = try decode(row, (String, String, Int64).self)
            current[PostgresText.loaded(client)] = (replica, epoch)
        }
        let lost = owned.filter { id, epoch in current[id].map { $0.0 != replicaID || $0.1 != epoch } ?? false }.map(\.key)
        dropClients(lost)
    }

    /// Forgets `ids` as owned and tells the edge clients to stop them.
    func dropClients(_ ids: [String]) {
        guard !ids.isEmpty else { return }
        ownedClients.withLock { for id in ids { $0.removeValue(forKey: id) } }
        logger.warning("Edge clients taken over by another replica stop here: \(ids.sorted().joined(separator: ", "))")
        clientsLost.withLock { $0 }?(ids)
    }
}
