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
            var replicas: [ReplicaStatus] = []
            for row in try session.query("""
                SELECT replica, address, \(unescaped: PostgresStore.rfc3339("started_at")), \(unescaped: PostgresStore.rfc3339("heartbeat_at")),
                       heartbeat_at > now() - make_interval(secs => \(Double(leaseSeconds)))
                FROM fg_replicas ORDER BY replica
                """).rows {
                let (id, address, started, heartbeat, alive) = try decode(row, (String, String, String, String, Bool).self)
                replicas.append(ReplicaStatus(id: id, address: address, startedAt: started, heartbeatAt: heartbeat, alive: alive,
                                              scopes: leases[id] ?? []))
            }
            return replicas
        }
    }

    /// A timestamptz column as RFC 3339 in UTC.
    static func rfc3339(_ column: String) -> String {
        "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"
    }
}
