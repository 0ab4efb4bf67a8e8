import FiregateModel
import FiregateStore
import PostgresNIO

/// `fg_replicas` and the leases of `fg_heads`, for `GET /emulator/v1/replicas`.
extension PostgresStore: ReplicaDirectory {
    public func replicas() throws -> [ReplicaStatus] {
        try read { session throws(FiregateError) -> [ReplicaStatus] in
            var leases: [String: [ScopeLease]] = [:]
            for row in try session.query("""
                SELECT scope, owner, owner_epoch, \(unescaped: PostgresStore.rfc3339("lease_until")), lease_until < now(), seq
                FROM fg_heads WHERE owner IS NOT NULL ORDER BY scope
                """).rows {
                let (stored, owner, epoch, until, expired, seq) = try decode(row, (String, String, Int64, String, Bool, Int64).self)
                let text = PostgresText.loaded(stored)
                let scope: ScopeLease.Scope
                if let database = PostgresStore.database(ofScope: stored) {
                    scope = .documents(project: database.project, database: database.database)
                } else {
                    scope = .tree(namespace: String(text.dropFirst(2)))
                }
                leases[owner, default: []].append(ScopeLease(scope: scope, epoch: epoch, leaseUntil: until, expired: expired, seq: seq))
            }
            var clients: [String: [(id: String, epoch: Int64)]] = [:]
            for row in try session.query("SELECT replica, client_id, epoch FROM fg_client_owner ORDER BY client_id").rows {
                let (replica, client, epoch) = try decode(row, (String, String, Int64).self)
                clients[replica, default: []].append((PostgresText.loaded(client), epoch))
            }
            var replicas: [ReplicaStatus] = []
            for row in try session.query("""
                SELECT replica, address, \(unescaped: PostgresStore.rfc3339("started_at")), \(unescaped: PostgresStore.rfc3339("heartbeat_at")),
                       heartbeat_at > now() - make_interval(secs => \(Double(leaseSeconds)))
                FROM fg_replicas ORDER BY replica
                """).rows {
                let (id, address, started, heartbeat, alive) = try decode(row, (String, String, String, String, Bool).self)
                replicas.append(ReplicaStatus(id: id, address: address, startedAt: started, heartbeatAt: heartbeat, alive: alive,
                                              scopes: leases[id] ?? [], clients: clients[id] ?? []))
            }
            return replicas
        }
    }

    public func owner(of scope: ScopeLease.Scope) throws(FiregateError) -> ReplicaAddress? {
        let stored = PostgresStore.scope(scope)
        if leases.hold(stored).epoch != nil { return nil }
        return try readOnce { session throws(FiregateError) -> ReplicaAddress? in
            guard let row = try session.query("""
                SELECT h.owner, coalesce(r.address, '') FROM fg_heads h LEFT JOIN fg_replicas r ON r.replica = h.owner
                WHERE h.scope = \(stored) AND h.owner IS NOT NULL AND h.owner <> \(replicaID) AND h.lease_until > now()
                """).rows.first else { return nil }
            let (id, address) = try decode(row, (String, String).self)
            return ReplicaAddress(id: id, address: address)
        }
    }

    /// UNAVAILABLE naming the owner when another live replica owns `scope` (asked of the store
    /// only when this replica holds no lease on it); nil when this replica may write it.
    func writeRefusal(_ scope: ScopeLease.Scope) -> FiregateError? {
        guard !holdsLease(of: scope), let owner = try? owner(of: scope) else { return nil }
        return FiregateError(.unavailable, "\(PostgresText.loaded(PostgresStore.scope(scope))) is owned by replica \(owner.id) (\(owner.address)); this replica cannot write it now. Retry.")
    }

    public func holdings() -> ReplicaHoldings {
        var holdings = ReplicaHoldings()
        for (scope, owned) in leases.all {
            let database = scope.hasPrefix("d:")
            switch (owned, database) {
            case (true, true): holdings.ownedDatabases += 1
            case (true, false): holdings.ownedNamespaces += 1
            case (false, true): holdings.followedDatabases += 1
            case (false, false): holdings.followedNamespaces += 1
            }
        }
        holdings.clients = ownedClients.withLock { $0.count }
        return holdings
    }

    public func holdsLease(of scope: ScopeLease.Scope) -> Bool {
        leases.hold(PostgresStore.scope(scope)).epoch != nil
    }

    public func logSeq(of scope: ScopeLease.Scope) -> Int64? {
        leases.existing(PostgresStore.scope(scope))?.seq
    }

    public func awaitLog(of scope: ScopeLease.Scope, through seq: Int64, timeout: Duration) async {
        let stored = PostgresStore.scope(scope)
        let deadline = ContinuousClock.now + timeout
        var nextPoll = ContinuousClock.now
        // The owner's doorbell usually brings the commit first; the poll covers a lost one.
        while let held = leases.existing(stored)?.seq, held < seq, ContinuousClock.now < deadline {
            if ContinuousClock.now >= nextPoll {
                tail.pollSoon(self)
                nextPoll = ContinuousClock.now + .milliseconds(50)
            }
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// A timestamptz column as RFC 3339 in UTC.
    static func rfc3339(_ column: String) -> String {
        "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    }
}
