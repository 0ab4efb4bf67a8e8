import FiregateModel

/// A transaction the server tracks between beginTransaction and commit/rollback.
///
/// Read-write transactions lock what they read, as the server SDKs' transactions do in production
/// (docs/transactions.md): a document a live transaction has read cannot be changed by anyone
/// else until that transaction ends. Conflicts between transactions are settled by age
/// (wound-wait): an older transaction's commit aborts the younger holders of its documents; a
/// younger one waits for older holders, a bounded time. Each read also records the version it
/// saw, which the commit checks, so a write that bypasses the locks still aborts the transaction.
/// Read-only transactions read a fixed snapshot and lock nothing.
struct TransactionState: Sendable {
    let id: String
    let readOnly: Bool
    /// The snapshot time of a read-only transaction.
    let readTime: Timestamp?
    /// Update time seen per document read (nil: read as missing); for a read-write transaction,
    /// also the documents it holds locks on.
    var reads: [ResourcePath: Timestamp?] = [:]
    let startedAt: Timestamp
    /// Its age in conflicts: when the first attempt began (a retry keeps it, so it gets older
    /// with each attempt and eventually wins).
    let priority: Timestamp
    /// Aborted by an older transaction or by a lock wait that ran out: it holds no locks, and
    /// its reads and commit fail ABORTED; kept so that a retry naming it keeps its age.
    private(set) var aborted = false
    /// Its last read: a read-write transaction idle for `idleLimitMicros` has expired and
    /// holds no locks, so an abandoned one blocks writers for a minute at most.
    var lastActive: Timestamp

    static let idleLimitMicros: Int64 = 60 * 1_000_000

    init(id: String, readOnly: Bool, readTime: Timestamp?, startedAt: Timestamp, priority: Timestamp? = nil) {
        self.id = id
        self.readOnly = readOnly
        self.readTime = readTime
        self.startedAt = startedAt
        self.priority = priority ?? startedAt
        self.lastActive = startedAt
    }

    func isIdle(at now: Timestamp) -> Bool {
        !readOnly && now.microseconds - lastActive.microseconds > TransactionState.idleLimitMicros
    }

    /// Whether it started before `other` (ids break ties, so two never wait on each other).
    func isOlder(than other: TransactionState) -> Bool {
        priority != other.priority ? priority < other.priority : id < other.id
    }

    mutating func abort() {
        aborted = true
        reads = [:]
    }
}

extension DatabaseState {
    /// The live read-write transactions other than `owner` holding a lock on any of `paths`.
    func lockHolders(of paths: some Collection<ResourcePath>, except owner: String?, now: Timestamp) -> [String] {
        guard !transactions.isEmpty else { return [] }
        var holders: [String] = []
        for (id, tx) in transactions where id != owner && !tx.readOnly && !tx.reads.isEmpty && !tx.isIdle(at: now) {
            if paths.contains(where: { tx.reads[$0] != nil }) { holders.append(id) }
        }
        return holders
    }

    /// Settles the conflicts of a commit by `owner` (nil: a write outside any transaction, the
    /// youngest of all) over `paths`: younger holders are aborted; true when an older one still
    /// holds a lock, so the commit must wait.
    mutating func settleLocks(of paths: some Collection<ResourcePath>, owner: String?, now: Timestamp) -> Bool {
        let holders = lockHolders(of: paths, except: owner, now: now)
        guard !holders.isEmpty else { return false }
        let mine = owner.flatMap { transactions[$0] }
        var mustWait = false
        for holder in holders {
            if let mine, let other = transactions[holder], mine.isOlder(than: other) {
                transactions[holder]?.abort()
            } else {
                mustWait = true
            }
        }
        return mustWait
    }
}
