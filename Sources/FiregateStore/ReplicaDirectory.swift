import FiregateModel

/// The replicas sharing a store and what each owns (`GET /emulator/v1/replicas`); only a store
/// shared by several processes (PostgreSQL) has one.
public protocol ReplicaDirectory: Sendable {
    /// This process's replica id.
    var replicaID: String { get }
    /// Every replica that ever registered, with the scopes it holds a lease on.
    func replicas() throws -> [ReplicaStatus]
    /// The live replica that owns `scope` when that is not this one: writes to it go there.
    /// Nil when this replica holds the lease, or no replica holds a lease that has not run out
    /// (this replica then takes it with its first write).
    func owner(of scope: ScopeLease.Scope) throws(FiregateError) -> ReplicaAddress?
    /// Whether this replica holds the lease of `scope` as far as it knows, without asking the
    /// store (the commit's fence has the last word).
    func holdsLease(of scope: ScopeLease.Scope) -> Bool
    /// The last commit log `seq` this replica's memory of `scope` reflects; nil when it holds
    /// none (the scope then loads from the store, up to date, when first used).
    func logSeq(of scope: ScopeLease.Scope) -> Int64?
    /// Returns once this replica's memory of `scope` reflects the log through `seq`, holds none,
    /// or `timeout` has passed: a write forwarded to the owner is then visible here too.
    func awaitLog(of scope: ScopeLease.Scope, through seq: Int64, timeout: Duration) async
    /// Claims edge client `id` for this replica: nil when this replica owns it now (it did, or
    /// took it, with a new epoch, from a replica whose heartbeat is older than a lease); else the
    /// live owner, where the client's requests go.
    func claimClient(_ id: String) throws(FiregateError) -> ReplicaAddress?
    /// Gives up edge client `id` (deleted here).
    func releaseClient(_ id: String)
    /// `lost` gets the clients this replica owned that another replica took over (checked at
    /// each renewal, and all of them when this replica could not renew for half a lease): they
    /// must stop here.
    func onClientsLost(_ lost: @escaping @Sendable ([String]) -> Void)
    /// Keeps `connection`'s registered onDisconnect operations (their JSON; nil: none) in the
    /// store, in call order, so that another replica runs them if this one dies.
    func keepOnDisconnect(connection: String, namespace: String, operations: [UInt8]?)
    /// `run` gets the onDisconnect operations of connections whose replica's heartbeat is older
    /// than a lease, each set once: this replica claims them (they become its own, kept under
    /// the claim's `connection`) before it runs them, from `done` on. Each one's write carries
    /// a `DisconnectProgress`, so a claimer that dies leaves the rest to the next.
    func onOrphanedDisconnects(_ run: @escaping @Sendable (OrphanedDisconnect) -> Void)
    /// Records progress that no write carried (an operation that failed or wrote nothing).
    func recordDisconnectProgress(_ progress: DisconnectProgress)
    /// How many operations of this replica's claim `connection` ran, or nil when the claim is
    /// no longer this replica's (another claimed it, or all ran).
    func disconnectClaim(connection: String) throws(FiregateError) -> Int?
    /// What this replica holds now, from its own memory (for `/metrics`).
    func holdings() -> ReplicaHoldings
    /// The epoch at which this replica runs edge client `id`; nil when it does not.
    func clientEpoch(_ id: String) -> Int64?
    /// The answer stored with the commit of a queued write (see `QueuedWriteReceipt`); nil
    /// when none was committed.
    func storedAnswer(_ receipt: QueuedWriteReceipt) throws(FiregateError) -> [UInt8]?
}

/// The scopes a replica owns and follows, by kind, and the edge clients it runs.
public struct ReplicaHoldings: Sendable, Equatable {
    public var ownedDatabases = 0
    public var ownedNamespaces = 0
    public var followedDatabases = 0
    public var followedNamespaces = 0
    public var clients = 0

    public init() {}
}

/// One replica as the store records it. Times are RFC 3339, UTC.
public struct ReplicaStatus: Sendable {
    public var id: String
    public var address: String
    public var startedAt: String
    public var heartbeatAt: String
    /// Its heartbeat is younger than a lease.
    public var alive: Bool
    public var scopes: [ScopeLease]
    /// The edge clients it runs, with the epoch it claimed each at.
    public var clients: [(id: String, epoch: Int64)]

    public init(id: String, address: String, startedAt: String, heartbeatAt: String, alive: Bool, scopes: [ScopeLease],
                clients: [(id: String, epoch: Int64)] = []) {
        self.id = id
        self.address = address
        self.startedAt = startedAt
        self.heartbeatAt = heartbeatAt
        self.alive = alive
        self.scopes = scopes
        self.clients = clients
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

/// Another replica, as requests forwarded to it need it: its id and the URL it advertises.
public struct ReplicaAddress: Sendable, Equatable {
    public var id: String
    public var address: String

    public init(id: String, address: String) {
        self.id = id
        self.address = address
    }
}
