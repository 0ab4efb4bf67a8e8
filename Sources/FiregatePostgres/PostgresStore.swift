import FiregateModel
import FiregateStore
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// One replica's PostgreSQL store (`--store postgresql://…`): the documents, the tree and the
/// commit log in the tables of `PostgresSchema`, written by one ordered commit queue.
///
/// Every scope a replica writes is owned through a lease with a fencing epoch (`ScopeLeases`):
/// each commit checks, in its own statement, that this replica still holds the scope at the
/// epoch it acquired and that the log's head is where its memory is. A replica that lost the
/// scope (paused past its lease, another took over) writes nothing and its commit fails
/// UNAVAILABLE; the engine then reloads the scope from the store.
public final class PostgresStore: Sendable {
    public let location: PostgresLocation
    /// This replica's name in `fg_heads.owner` and `fg_replicas`.
    public let replicaID: String
    public let leaseSeconds: Int
    let logger: Logger
    /// Used by the commit queue's thread only (its transactions must not interleave).
    let writer: PostgresSession
    /// Loads, one at a time (`readLock`), in their own snapshot.
    let reader: PostgresSession
    private let readLock = NSLock()
    /// Lease renewal and the replica's heartbeat.
    private let keeper: PostgresSession
    let leases: ScopeLeases
    let queue: PostgresCommitQueue
    /// Applies the commits other replicas make to scopes held here without owning them.
    let tail: PostgresTail
    let doorbell: PostgresDoorbell
    /// Whether another replica's heartbeat is fresh (checked at each renewal): the doorbell
    /// rings only then.
    let othersAlive = Mutex(false)
    /// The edge clients this replica owns, with the epoch it claimed each at.
    let ownedClients = Mutex<[String: Int64]>([:])
    /// Told of owned clients another replica took over (`onClientsLost`).
    let clientsLost = Mutex<(@Sendable ([String]) -> Void)?>(nil)
    /// Runs the onDisconnect operations of dead replicas' connections (`onOrphanedDisconnects`).
    let orphanedDisconnects = Mutex<(@Sendable (OrphanedDisconnect) -> Void)?>(nil)
    /// Held while the tail applies the log and while a reload replaces a scope in memory, so
    /// that the tail never applies a commit to memory a reload is about to replace with an
    /// older snapshot (it would count the commit as applied and never apply it again).
    let followLock = NSLock()
    /// Keeps connections' onDisconnect operations in the store, in order, off their callers.
    let disconnectKeeping = DispatchQueue(label: "firegate.postgres.ondisconnect")
    /// Renews the leases (see `startRenewal`): set at the end of `init`, cancelled by `close`.
    /// (A dispatch source must be resumed before it is released, so none exists until then.)
    private nonisolated(unsafe) var renewal: DispatchSourceTimer?

    /// Connects, migrates the schema and registers the replica. Throws UNAVAILABLE (with the
    /// location, never its password) when PostgreSQL cannot be reached.
    public init(location: PostgresLocation, replicaID: String, address: String, leaseSeconds: Int = 10,
                logger: Logger = Logger(label: "firegate.postgres")) throws(FiregateError) {
        guard leaseSeconds >= 2 else { throw .invalidArgument("--lease-seconds must be at least 2.") }
        self.location = location
        self.replicaID = replicaID
        self.leaseSeconds = leaseSeconds
        self.logger = logger
        writer = PostgresSession(location: location, logger: logger)
        reader = PostgresSession(location: location, logger: logger)
        keeper = PostgresSession(location: location, logger: logger)
        leases = ScopeLeases(replicaID: replicaID, leaseSeconds: leaseSeconds)
        queue = PostgresCommitQueue()
        tail = PostgresTail(location: location, logger: logger)
        doorbell = PostgresDoorbell(location: location, logger: logger)
        try PostgresSchema.migrate(writer)
        try keeper.query("""
            INSERT INTO fg_replicas (replica, address, heartbeat_at) VALUES (\(replicaID), \(address), now())
            ON CONFLICT (replica) DO UPDATE SET address = excluded.address, started_at = now(), heartbeat_at = now()
            """)
        queue.start(store: self)
        startRenewal()
        tail.start(self)
        doorbell.listen { [weak tail, weak self] in
            guard let tail, let self else { return }
            tail.pollSoon(self)
        }
    }

    /// Reads in one snapshot (REPEATABLE READ), one load at a time.
    func read<T>(_ body: (PostgresSession) throws(FiregateError) -> T) throws(FiregateError) -> T {
        readLock.lock()
        defer { readLock.unlock() }
        return try reader.transaction(isolation: "REPEATABLE READ READ ONLY") { () throws(FiregateError) -> T in try body(reader) }
    }

    /// One statement on the reader outside a snapshot, between loads.
    func readOnce<T>(_ body: (PostgresSession) throws(FiregateError) -> T) throws(FiregateError) -> T {
        readLock.lock()
        defer { readLock.unlock() }
        return try body(reader)
    }

    /// Renews this replica's leases and heartbeat every third of the lease. A renewal that
    /// finds a scope no longer held at its epoch forgets the hold (the next commit acquires
    /// again, and fails if another replica wrote meanwhile); one that cannot reach PostgreSQL
    /// for half the lease forgets every hold, so this replica stops writing on its own.
    private func startRenewal() {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "firegate.postgres.leases"))
        let interval = max(0.5, Double(leaseSeconds) / 3)
        timer.schedule(deadline: .now() + interval, repeating: interval)
        let lastRenewed = Mutex(ContinuousClock.now)
        let lastPruned = Mutex(ContinuousClock.now)
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            do {
                try keeper.query("UPDATE fg_replicas SET heartbeat_at = now() WHERE replica = \(replicaID)")
                let others = try keeper.query("""
                    SELECT count(*) FROM fg_replicas
                    WHERE replica <> \(replicaID) AND heartbeat_at > now() - make_interval(secs => \(Double(leaseSeconds)))
                    """).rows.first.flatMap { try? $0.decode(Int64.self) } ?? 0
                othersAlive.withLock { $0 = others > 0 }
                let rows = try keeper.query("""
                    UPDATE fg_heads SET lease_until = now() + make_interval(secs => \(leaseSeconds))
                    WHERE owner = \(replicaID) RETURNING scope, owner_epoch
                    """).rows
                var held: [String: Int64] = [:]
                for row in rows { if let (scope, epoch) = try? row.decode((String, Int64).self) { held[scope] = epoch } }
                leases.confirm(held)
                try checkOwnedClients(keeper)
                try reapOrphanedDisconnects(keeper)
                lastRenewed.withLock { $0 = .now }
                if lastPruned.withLock({ last in
                    guard ContinuousClock.now - last > .seconds(60) else { return false }
                    last = .now
                    return true
                }) { try pruneReceipts(keeper) }
                // The log keeps the last `logWindow` commits of each scope this replica owns.
                try keeper.query("""
                    DELETE FROM fg_log l USING fg_heads h
                    WHERE l.scope = h.scope AND h.owner = \(replicaID) AND l.seq <= h.seq - \(PostgresStore.logWindow)
                    """)
            } catch {
                let silent = lastRenewed.withLock { ContinuousClock.now - $0 }
                if silent > .seconds(Double(leaseSeconds) / 2) {
                    // Cut off for half a lease: stop writing and stop running clients, as
                    // others may take them over once the lease has run out.
                    leases.forgetAll()
                    dropClients(Array(ownedClients.withLock { $0.keys }))
                }
                logger.warning("PostgreSQL lease renewal failed: \(error)")
            }
        }
        timer.resume()
        renewal = timer
    }

    /// Stops renewing (the leases then run out) and closes the connections.
    public func close() {
        renewal?.cancel()
        queue.stop()
        tail.stop()
        doorbell.stop()
        writer.close()
        reader.close()
        keeper.close()
    }

    /// Commits the log keeps per scope for followers that fall behind (as many as a database's
    /// in-memory history keeps); one further behind reloads the scope.
    static let logWindow: Int64 = 20_000

    /// The scope of a document database.
    static func scope(_ database: DatabaseID) -> String { PostgresText.stored("d:\(database.project)/\(database.database)") }
    /// The scope of a tree namespace.
    static func scope(namespace: String) -> String { PostgresText.stored("t:\(namespace)") }

    static func scope(_ scope: ScopeLease.Scope) -> String {
        switch scope {
        case .documents(let project, let database): PostgresStore.scope(DatabaseID(project: project, database: database))
        case .tree(let namespace): PostgresStore.scope(namespace: namespace)
        }
    }

    static func database(ofScope stored: String) -> DatabaseID? {
        let scope = PostgresText.loaded(stored)
        guard scope.hasPrefix("d:") else { return nil }
        let parts = scope.dropFirst(2).split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        return DatabaseID(project: String(parts[0]), database: String(parts[1]))
    }
}

/// Which scopes this replica holds, at which epoch, and the log head its memory reflects.
final class ScopeLeases: Sendable {
    struct Hold: Sendable {
        var epoch: Int64?
        /// The `seq` of the last commit the engine's memory holds (from a load or our commit).
        var seq: Int64 = 0
        /// The scope's generation as memory holds it (nil until the scope's head row exists).
        var generation: String?
    }

    let replicaID: String
    let leaseSeconds: Int
    private let holds = Mutex<[String: Hold]>([:])

    init(replicaID: String, leaseSeconds: Int) {
        self.replicaID = replicaID
        self.leaseSeconds = leaseSeconds
    }

    func hold(_ scope: String) -> Hold { holds.withLock { $0[scope] ?? Hold() } }

    /// The hold of a scope in memory here, nil for one never loaded.
    func existing(_ scope: String) -> Hold? { holds.withLock { $0[scope] } }

    /// The engine's memory now reflects the log up to `seq` of `generation` (after a load).
    func loaded(_ scope: String, seq: Int64, generation: String?) {
        holds.withLock { holds in
            holds[scope, default: Hold()].seq = seq
            holds[scope]?.generation = generation
        }
    }

    /// The scope's generation, learnt when its head row was made or it was cleared.
    func generation(_ scope: String, _ generation: String) { holds.withLock { $0[scope, default: Hold()].generation = generation } }

    /// The tail applied the log through `seq` (never backwards: a load in between set it).
    func followed(_ scope: String, through seq: Int64) {
        holds.withLock { holds in if holds[scope, default: Hold()].seq < seq { holds[scope]?.seq = seq } }
    }

    /// Every scope in memory here, and whether this replica owns it.
    var all: [String: Bool] { holds.withLock { $0.mapValues { $0.epoch != nil } } }

    /// The scopes in memory here that this replica does not own, with the `seq` memory holds.
    var followed: [String: Int64] { holds.withLock { $0.filter { $0.value.epoch == nil }.mapValues(\.seq) } }

    func acquired(_ scope: String, epoch: Int64) { holds.withLock { $0[scope, default: Hold()].epoch = epoch } }

    func committed(_ scope: String, seq: Int64) { holds.withLock { $0[scope, default: Hold()].seq = seq } }

    /// Forgets the epoch of `scope` (lost, or fenced off); its memory's `seq` stays.
    func lost(_ scope: String) { holds.withLock { $0[scope]?.epoch = nil } }

    func forgetAll() { holds.withLock { for key in $0.keys { $0[key]?.epoch = nil } } }

    /// After a renewal: keeps the holds PostgreSQL still shows at the same epoch.
    func confirm(_ renewed: [String: Int64]) {
        holds.withLock { holds in
            for (scope, hold) in holds where hold.epoch != nil && renewed[scope] != hold.epoch { holds[scope]?.epoch = nil }
        }
    }
}
