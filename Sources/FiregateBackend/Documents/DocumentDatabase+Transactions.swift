import FiregateModel
import Foundation

/// Transactions: begin, rollback, and the document locks a write waits for (TransactionState,
/// docs/transactions.md).
extension DocumentDatabase {
    public func beginTransaction(_ options: TransactionOptions) throws(FiregateError) -> String {
        try state.withLock { state throws(FiregateError) in try begin(options, in: &state) }
    }

    public func rollback(_ transaction: String) throws(FiregateError) {
        try state.withLock { state throws(FiregateError) in
            guard state.transactions.removeValue(forKey: transaction) != nil else {
                throw DocumentDatabase.invalidTransaction
            }
        }
    }

    /// Whether a write outside any transaction to one of these documents would wait for a
    /// transaction's lock (the fast paths then leave it to the full path, which waits).
    public func holdsLocks(on writes: [Write]) -> Bool {
        state.withLock { state in
            !state.transactions.isEmpty && !state.lockHolders(of: writes.lazy.map(\.path), except: nil, now: lockTime).isEmpty
        }
    }

    /// The clock's reading for lock and idle checks: unlike `clock.now()` it hands out no time,
    /// so checking locks does not move a frozen clock's next commit time.
    var lockTime: Timestamp { Timestamp(microseconds: clock.readingMicros()) }

    static let transactionLifetimeMicros: Int64 = 270 * 1_000_000
    /// How long a write waits for an older transaction's lock before it fails; the official
    /// emulator waits about as long, and suites must not stall on an abandoned transaction.
    static let lockWait: Duration = .seconds(2)

    static let invalidTransaction = FiregateError.invalidArgument("The referenced transaction has expired or is no longer valid.")
    static let contention = FiregateError.aborted("Aborted due to cross-transaction contention. This occurs when multiple transactions attempt to access the same data, requiring Firestore to abort at least one in order to enforce serializability.")
    /// A lock wait that ran out: production's words for it (docs/transactions.md).
    static let lockTimeout = FiregateError.aborted("Too much contention on these documents. Please try again.")

    func begin(_ options: TransactionOptions, in state: inout DatabaseState) throws(FiregateError) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
        let txID = Base64.encode(bytes)
        let now = clock.now()
        // Production expires a transaction after 270 s, and a read-write one after a minute
        // without a read; abandoned ones must not pile up (nor hold their locks).
        let horizon = now.microseconds - DocumentDatabase.transactionLifetimeMicros
        state.transactions = state.transactions.filter { $0.value.startedAt.microseconds >= horizon && !$0.value.isIdle(at: now) }
        switch options {
        case .readOnly(let readTime):
            if let readTime { try checkReadable(readTime, in: state) }
            state.transactions[txID] = TransactionState(id: txID, readOnly: true, readTime: readTime ?? now, startedAt: now)
        case .readWrite(let retrying):
            // A retry keeps the age of the attempt it replaces, so it is not aborted forever.
            let previous = retrying.flatMap { state.transactions.removeValue(forKey: $0) }
            state.transactions[txID] = TransactionState(id: txID, readOnly: false, readTime: nil, startedAt: now,
                                                        priority: previous?.priority)
        }
        return txID
    }

    /// Runs `body` under the state lock once no older transaction holds a lock on `paths`
    /// (younger holders are aborted), polling while it waits; `transaction` is the committing
    /// one, nil for a write outside transactions. When the wait runs out, `timedOut` runs instead.
    func afterLocks<T>(on paths: some Collection<ResourcePath>, transaction: String?,
                       timedOut: (inout DatabaseState) throws(FiregateError) -> T,
                       _ body: (inout DatabaseState) throws(FiregateError) -> T) async throws(FiregateError) -> T {
        let deadline = ContinuousClock.now + DocumentDatabase.lockWait
        while true {
            let outcome: T? = try state.withLock { state throws(FiregateError) -> T? in
                // No transaction, no lock: no clock reading either (the common commit).
                let now = state.transactions.isEmpty ? Timestamp(microseconds: 0) : lockTime
                if let transaction {
                    guard let tx = state.transactions[transaction] else { throw DocumentDatabase.invalidTransaction }
                    if tx.isIdle(at: now) {
                        state.transactions[transaction] = nil
                        throw DocumentDatabase.invalidTransaction
                    }
                    // Kept (until rolled back, retried or expired) so that a retry keeps its age.
                    if tx.aborted { throw DocumentDatabase.contention }
                }
                guard state.settleLocks(of: paths, owner: transaction, now: now) else { return try body(&state) }
                return ContinuousClock.now < deadline ? nil : try timedOut(&state)
            }
            if let outcome { return outcome }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}
