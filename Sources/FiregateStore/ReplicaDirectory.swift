/// The replicas sharing a store and what each owns (`GET /emulator/v1/replicas`); only a store
/// shared by several processes (PostgreSQL) has one.
public protocol ReplicaDirectory: Sendable {
    /// This process's replica id.
    var replicaID: String { get }
    /// Every replica that ever registered, with the scopes it holds a lease on.
    func replicas() throws -> [ReplicaStatus]
}

/// One replica as the store records it. Times are RFC 3339, UTC.
public struct ReplicaStatus: Sendable, Equatable {
    public var id: String
    public var address: String
    public var startedAt: String
    public var heartbeatAt: String
    /// Its heartbeat is younger than a lease.
    public var alive: Bool
    public var scopes: [ScopeLease]

    public init(id: String, address: String, startedAt: String, heartbeatAt: String, alive: Bool, scopes: [ScopeLease]) {
        self.id = id
        self.address = address
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.alive = alive
        self.scopes = scopes
    }
}

/// A scope's lease: a document database or a tree namespace, the epoch its owner holds it at,
/// until when, and the commit log's head.
public struct ScopeLease: Sendable, Equatable {
    public enum Scope: Sendable, Equatable {
        case documents(project: String, database: String)
        case tree(namespace: String)
    }

    public var scope: Scope
    public var epoch: Int64
    public var leaseUntil: String
    public var expired: Bool
    public var seq: Int64

    public init(scope: Scope, epoch: Int64, leaseUntil: String, expired: Bool, seq: Int64) {
        self.scope = scope
        self.epoch = epoch
        self.leaseUntil = leaseUntil
        self.expired = expired
        self.seq = seq
    }
}
