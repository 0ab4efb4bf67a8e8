import FiregateModel
import FiregateRules
import FiregateStore
import Foundation
import Synchronization

/// One Firestore database (`projects/{p}/databases/{d}`): documents, queries, atomic commits,
/// transactions and the change feed.
///
/// State lives behind a `Mutex` rather than in an actor so the hot read path (GET of a cached
/// encoding) never hops executors; every operation holds the lock only for in-memory work.
/// Commits apply in memory, queue their batch to storage under the same lock (so durability and
/// the feed follow commit order), and answer once the batch is durable.
public final class DocumentDatabase: Sendable {
    public let id: DatabaseID
    public let feed = DocumentChangeFeed()
    /// The first part of resume tokens: random per process, which tells this run's tokens from
    /// an earlier run's; on a shared store, the database's generation in the log, the same on
    /// every replica (see `adoptLogPosition`).
    let epoch = Mutex(String(UInt32.random(in: 0...UInt32.max), radix: 36))
    let clock: ServerClock
    let storage: any DocumentStorage
    let operations: OperationsLog?
    let state = Mutex(DatabaseState())

    init(id: DatabaseID, clock: ServerClock, storage: any DocumentStorage, operations: OperationsLog?, documents: [Document]) {
        self.id = id
        self.clock = clock
        self.storage = storage
        self.operations = operations
        state.withLock { state in
            state.documents.reserveCapacity(documents.count)
            for document in documents { state.put(document) }
            // Loaded documents come without their history: refuse reads of earlier times.
            if !documents.isEmpty { state.prunedThrough = clock.now() }
            // On a shared store, commits count as the log does, so tokens mean the same everywhere.
            if let position = storage.position(id) {
                state.sequence = position.seq
                let documents = state.documents
                let logged = storage.loggedCommits(id, through: position.seq) { documents[$0]?.document }
                DocumentDatabase.installLoggedHistory(&state, logged, through: position.seq)
            }
        }
        if let position = storage.position(id) { epoch.withLock { $0 = position.generation } }
    }

    /// On a shared store, the generation this database's commits now belong to (learnt when its
    /// first commit made its log head, or a clear started a new one). Called in commit order,
    /// before a commit is published, so every token it yields carries it.
    func adoptLogGeneration() {
        guard let generation = storage.position(id)?.generation else { return }
        epoch.withLock { if $0 != generation { $0 = generation } }
    }


    /// The number of commits the memory reflects (on a shared store: the log's `seq`).
    public var currentSequence: Int64 { state.withLock { $0.sequence } }

    // MARK: Reads

    /// The document's JSON encoding, cached per version: the GET fast path.
    public func encodedDocument(_ path: ResourcePath) -> [UInt8]? {
        state.withLock { state in
            guard let entry = state.documents[path] else { return nil }
            if let encoded = entry.encoded { return encoded }
            let bytes = JSONWriter.bytes(entry.document.json(database: id))
            state.documents[path]?.encoded = bytes
            return bytes
        }
    }

    /// The document's protobuf encoding, made by `encode` (the gRPC layer's, which this target
    /// does not know) and cached per version like `encodedDocument`: the gRPC GetDocument fast path.
    public func encodedMessage(_ path: ResourcePath, encode: (Document) throws -> [UInt8]) rethrows -> [UInt8]? {
        try state.withLock { state in
            guard let entry = state.documents[path] else { return nil }
            if let encoded = entry.encodedMessage { return encoded }
            let bytes = try encode(entry.document)
            state.documents[path]?.encodedMessage = bytes
            return bytes
        }
    }

    /// Reads one document under a consistency selector.
    public func get(_ path: ResourcePath, consistency: ReadConsistency = .latest) throws(FiregateError) -> ReadResult<Document?> {
        try batchGet([path], consistency: consistency).map { $0[0].1 }
    }

    /// Reads several documents from one snapshot, in the order asked.
    public func batchGet(_ paths: [ResourcePath], consistency: ReadConsistency) throws(FiregateError) -> ReadResult<[(ResourcePath, Document?)]> {
        try state.withLock { state throws(FiregateError) in
            let snapshot = try resolve(consistency, in: &state)
            let found = paths.map { ($0, state.document($0, at: snapshot.time)) }
            if let tx = snapshot.recordingTransaction {
                // `.some`: assigning a plain nil would remove the entry instead of recording "missing".
                for (path, doc) in found { state.transactions[tx]?.reads[path] = .some(doc?.updateTime) }
            }
            return ReadResult(value: found, readTime: snapshot.readTime, transaction: snapshot.newTransaction)
        }
    }

    /// Runs a structured query.
    public func runQuery(_ query: Query, consistency: ReadConsistency = .latest) throws(FiregateError) -> ReadResult<QueryResult> {
        try state.withLock { state throws(FiregateError) in
            let snapshot = try resolve(consistency, in: &state)
            let (documents, skipped) = query.run(over: state.candidates(for: query, at: snapshot.time), database: id)
            if let tx = snapshot.recordingTransaction {
                for doc in documents { state.transactions[tx]?.reads.updateValue(doc.updateTime, forKey: doc.path) }
            }
            return ReadResult(value: QueryResult(documents: documents, skipped: skipped), readTime: snapshot.readTime, transaction: snapshot.newTransaction)
        }
    }

    /// Runs the aggregations over a query's result.
    public func runAggregation(_ query: Query, aggregations: [Aggregation], consistency: ReadConsistency = .latest) throws(FiregateError) -> ReadResult<[(String, Value)]> {
        let result = try runQuery(try Aggregation.effectiveQuery(query, for: aggregations), consistency: consistency)
        return try result.map { value in aggregations.map { ($0.alias, $0.compute(over: value.documents, database: id)) } }
    }

    /// Lists a collection (ListDocuments): ordered, paged by offset, optionally with the
    /// missing documents that have subcollections.
    public func list(collection: ResourcePath, orderBy: [Query.Ordering], offset: Int, limit: Int?, showMissing: Bool,
                     consistency: ReadConsistency) throws(FiregateError) -> ReadResult<[ListedDocument]> {
        try state.withLock { state throws(FiregateError) in
            let snapshot = try resolve(consistency, in: &state)
            let query = Query(parent: collection.parent, collectionID: collection.lastSegment, orderBy: orderBy)
            var listed = query.run(over: state.candidates(for: query, at: snapshot.time), database: id).documents.map(ListedDocument.found)
            if showMissing {
                var missing = Set<ResourcePath>()
                for path in state.allPaths where path.count > collection.count + 1 && collection.isPrefix(of: path) {
                    let ancestor = ResourcePath(Array(path.segments.prefix(collection.count + 1)))
                    if state.documents[ancestor] == nil { missing.insert(ancestor) }
                }
                listed += missing.map(ListedDocument.missing)
                listed.sort { ResourcePath.compare($0.path, $1.path) < 0 }
            }
            let page = Array(listed.dropFirst(offset).prefix(limit ?? Int.max))
            return ReadResult(value: page, readTime: snapshot.readTime, transaction: snapshot.newTransaction)
        }
    }

    /// Ids of the collections directly under `parent` that hold any document below them, now
    /// or at the consistency's read time.
    public func listCollectionIDs(parent: ResourcePath, consistency: ReadConsistency = .latest) throws(FiregateError) -> [String] {
        try state.withLock { state throws(FiregateError) in
            let snapshot = try resolve(consistency, in: &state)
            var paths = Set(state.allPaths.filter { $0.count > parent.count && parent.isPrefix(of: $0) })
            if let time = snapshot.time {
                // Documents deleted since then existed then; those created since did not.
                for commit in state.history.reversed() {
                    if commit.commitTime <= time { break }
                    for change in commit.changes where change.path.count > parent.count && parent.isPrefix(of: change.path) {
                        paths.insert(change.path)
                    }
                }
                paths = paths.filter { state.document($0, at: time) != nil }
            }
            return Set(paths.map { $0.segments[parent.count] }).sorted { Value.compareUTF8($0, $1) < 0 }
        }
    }

    public var documentCount: Int { state.withLock { $0.documents.count } }

    /// Whether the state is being reloaded after a storage failure (commits are refused).
    public var isRecovering: Bool { state.withLock { $0.recovering } }

    /// What snapshot a read sees and which transaction (if any) records it.
    struct Snapshot {
        var time: Timestamp?
        var readTime: Timestamp
        var recordingTransaction: String?
        var newTransaction: String?
    }

    func resolve(_ consistency: ReadConsistency, in state: inout DatabaseState) throws(FiregateError) -> Snapshot {
        switch consistency {
        case .latest:
            return Snapshot(time: nil, readTime: clock.now())
        case .readTime(let time):
            try checkReadable(time, in: state)
            return Snapshot(time: time, readTime: time)
        case .transaction(let txID):
            guard let tx = state.transactions[txID] else { throw DocumentDatabase.invalidTransaction }
            let now = lockTime
            if tx.isIdle(at: now) {
                state.transactions[txID] = nil
                throw DocumentDatabase.invalidTransaction
            }
            if tx.aborted { throw DocumentDatabase.contention }
            state.transactions[txID]?.lastActive = now
            if tx.readOnly { return Snapshot(time: tx.readTime, readTime: tx.readTime!) }
            return Snapshot(time: nil, readTime: clock.now(), recordingTransaction: txID)
        case .newTransaction(let options):
            let txID = try begin(options, in: &state)
            var snapshot = try resolve(.transaction(txID), in: &state)
            snapshot.newTransaction = txID
            return snapshot
        }
    }

    func checkReadable(_ time: Timestamp, in state: DatabaseState) throws(FiregateError) {
        if let pruned = state.prunedThrough, time < pruned {
            throw .failedPrecondition("readTime \(time.rfc3339) is older than the oldest version this emulator keeps (\(pruned.rfc3339)).")
        }
    }

    // MARK: Writes

    /// Applies `writes` atomically with one commit time; returns once durable. `companion`
    /// becomes durable in the same storage transaction (even when nothing changes).
    /// A commit applied in memory whose durability is still awaited, so that a client can
    /// pipeline several commits (applied in order, made durable together).
    public struct PendingCommit: Sendable {
        let result: CommitResult
        let signal: DurabilitySignal

        /// The result once the commit is on disk.
        public func durable() async throws(FiregateError) -> CommitResult {
            do {
                try await signal.wait()
            } catch {
                throw DocumentDatabase.notDurable(error, "commit")
            }
            return result
        }

        /// Calls `body` with the result once the commit is on disk (or with the failure), on
        /// the thread that made it durable.
        public func whenDurable(_ body: @escaping @Sendable (Result<CommitResult, FiregateError>) -> Void) {
            let result = self.result
            signal.onComplete { outcome in
                switch outcome {
                case .success: body(.success(result))
                case .failure(let error): body(.failure(DocumentDatabase.notDurable(error, "commit")))
                }
            }
        }
    }

    /// Applies a commit now (its order among commits is fixed by this call) without waiting
    /// for it to be durable.
    public func beginCommit(_ writes: [Write], companion: (any CommitCompanion)? = nil, judge: (any CommitJudge)? = nil) throws(FiregateError) -> PendingCommit {
        guard writes.count <= DocumentLimits.maxWritesPerCommit else {
            throw .invalidArgument("A maximum of 500 writes allowed per request.")
        }
        try Write.validateSequence(writes)
        defer { judge?.settle() }  // after the lock is released
        let (result, signal) = try state.withLock { state throws(FiregateError) in
            // A document a transaction holds: the full path (`commit`) waits for it.
            if !state.transactions.isEmpty, !state.lockHolders(of: writes.lazy.map(\.path), except: nil, now: lockTime).isEmpty {
                throw DocumentDatabase.lockTimeout
            }
            return try apply(writes, in: &state, companion: companion, judge: judge)
        }
        return PendingCommit(result: result, signal: signal)
    }

    /// `receipt`: an edge client's queued batch from another replica, whose answer is stored
    /// with the commit (see `QueuedWriteReceipt`).
    public func commit(_ writes: [Write], transaction: String? = nil, companion: (any CommitCompanion)? = nil,
                       judge: (any CommitJudge)? = nil, receipt: QueuedWriteReceipt? = nil) async throws(FiregateError) -> CommitResult {
        guard writes.count <= DocumentLimits.maxWritesPerCommit else {
            throw .invalidArgument("A maximum of 500 writes allowed per request.")
        }
        try Write.validateSequence(writes)
        if let transaction, !writes.isEmpty, state.withLock({ $0.transactions[transaction]?.readOnly == true }) {
            throw .invalidArgument("Cannot modify entities in a read-only transaction.")
        }
        let locked: Result<(CommitResult, DurabilitySignal), FiregateError>
        do {
            locked = .success(try await afterLocks(on: writes.lazy.map(\.path), transaction: transaction, timedOut: { state throws(FiregateError) in
                if let transaction { state.transactions[transaction]?.abort() }
                throw DocumentDatabase.lockTimeout
            }) { state throws(FiregateError) in
                if let transaction, let tx = state.transactions.removeValue(forKey: transaction) {
                    // A write that bypassed the locks (a replica's, a restore) still aborts it.
                    for (path, seen) in tx.reads where state.documents[path]?.document.updateTime != seen {
                        throw DocumentDatabase.contention
                    }
                }
                return try apply(writes, in: &state, companion: companion, judge: judge, receipt: receipt)
            })
        } catch {
            locked = .failure(error)
        }
        judge?.settle()  // after the lock is released
        let (result, signal) = try locked.get()
        do {
            try await signal.wait()
        } catch {
            throw DocumentDatabase.notDurable(error, "commit")
        }
        return result
    }

    /// BatchWrite: each write on its own, not atomic; one result per write.
    /// Each write is judged on its own: a denied one fails alone.
    public func batchWrite(_ writes: [Write], judge: (any CommitJudge)? = nil) async throws(FiregateError) -> [Result<WriteResult, FiregateError>] {
        guard writes.count <= DocumentLimits.maxWritesPerCommit else {
            throw .invalidArgument("A maximum of 500 writes allowed per request.")
        }
        var seen = Set<ResourcePath>()
        for write in writes where !seen.insert(write.path).inserted {
            throw .invalidArgument("the same document cannot be written more than once in a single request")
        }
        // Each write waits for the transactions holding its document; when the wait runs out,
        // the ones still held fail alone.
        let applyEach = { (state: inout DatabaseState) -> [Result<(WriteResult, DurabilitySignal), FiregateError>] in
            writes.map { write -> Result<(WriteResult, DurabilitySignal), FiregateError> in
                do throws(FiregateError) {
                    if !state.transactions.isEmpty, !state.lockHolders(of: CollectionOfOne(write.path), except: nil, now: self.lockTime).isEmpty { throw DocumentDatabase.lockTimeout }
                    let (result, signal) = try self.apply([write], in: &state, judge: judge)
                    return .success((result.writeResults[0], signal))
                } catch {
                    return .failure(error)
                }
            }
        }
        let pending = try await afterLocks(on: seen, transaction: nil, timedOut: applyEach, applyEach)
        judge?.settle()  // after the lock is released
        var results: [Result<WriteResult, FiregateError>] = []
        for item in pending {
            switch item {
            case .success(let (result, signal)):
                do {
                    try await signal.wait()
                    results.append(.success(result))
                } catch {
                    results.append(.failure(DocumentDatabase.notDurable(error, "write")))
                }
            case .failure(let error):
                results.append(.failure(error))
            }
        }
        return results
    }

    /// Applies writes to the state (all or nothing) and queues them for durability.
    func apply(_ writes: [Write], in state: inout DatabaseState, companion: (any CommitCompanion)? = nil,
               judge: (any CommitJudge)? = nil, receipt: QueuedWriteReceipt? = nil) throws(FiregateError) -> (CommitResult, DurabilitySignal) {
        if state.recovering {
            throw .unavailable("The database is recovering from a storage failure; retry the write.")
        }
        // Another replica owns it: refused before memory changes (the fence would refuse it
        // after, and the reload would end this replica's listeners).
        if let refusal = storage.writeRefusal(id) { throw refusal }
        let staged = try state.stage(writes, commitTime: Timestamp(microseconds: clock.nextCommitMicros()), database: id, judge: judge)
        return persist(staged, in: &state, companion: companion, receipt: receipt)
    }

    /// Puts a staged commit in memory, in commit order, and queues it to the store; the feed
    /// publishes it once durable.
    func persist(_ staged: StagedCommit, in state: inout DatabaseState, companion: (any CommitCompanion)?,
                 receipt: QueuedWriteReceipt?) -> (CommitResult, DurabilitySignal) {
        let commitTime = staged.commitTime, changes = staged.changes
        var upserts: [Document] = []
        var deletes: [ResourcePath] = []
        var befores: [Document] = []
        for change in changes {
            if let before = change.before { befores.append(before) }
            if let after = change.after {
                state.put(after, rulesResource: staged.judgedAfter.isEmpty ? nil : staged.judgedAfter[change.path])
                upserts.append(after)
            } else {
                state.remove(change.path)
                deletes.append(change.path)
            }
        }
        let signal = DurabilitySignal()
        let result = CommitResult(commitTime: commitTime, writeResults: staged.results)
        var receipt = receipt
        receipt?.answer = JSONWriter.bytes(result.restJSON)
        guard !changes.isEmpty else {
            if companion != nil || receipt != nil {
                storage.enqueue(DocumentPersistBatch(database: id, upserts: [], deletes: [], companion: companion, receipt: receipt)) { signal.complete($0) }
            } else {
                signal.complete(.success(()))
            }
            return (result, signal)
        }
        state.sequence += 1
        let record = CommitRecord(sequence: state.sequence, commitTime: commitTime, changes: changes)
        state.record(record)
        let feed = self.feed
        storage.enqueue(DocumentPersistBatch(database: id, upserts: upserts, deletes: deletes, companion: companion, commitTime: commitTime,
                                             receipt: receipt, befores: befores)) { [self] outcome in
            switch outcome {
            case .success:
                adoptLogGeneration()
                feed.publish(record)
                operations?.record(.commit(database: id, commitTime: commitTime, documents: record.changes.map(\.path)))
                signal.complete(outcome)
            case .failure:
                DispatchQueue.global().async { self.recoverFromStorage { signal.complete(outcome) } }
            }
        }
        return (result, signal)
    }

    /// Deletes every document; open listeners end with `error`.
    public func reset() async throws {
        let signal = DurabilitySignal()
        let reached = state.withLock { state in
            let sequence = state.sequence
            state = DatabaseState()
            state.sequence = sequence + 1
            state.prunedThrough = clock.now()
            storage.enqueueClear(id) { [self] outcome in
                if case .success = outcome { adoptLogGeneration() }
                signal.complete(outcome)
            }
            return state.sequence
        }
        feed.closeAll(.init(.aborted, "The database was reset."), through: reached)
        try await signal.wait()
    }
}

/// A read's value with the snapshot it came from and the transaction it may have started.
public struct ReadResult<Value: Sendable>: Sendable {
    public let value: Value
    public let readTime: Timestamp
    public let transaction: String?

    func map<T>(_ transform: (Value) throws(FiregateError) -> T) throws(FiregateError) -> ReadResult<T> {
        ReadResult<T>(value: try transform(value), readTime: readTime, transaction: transaction)
    }
}

public struct QueryResult: Sendable {
    public let documents: [Document]
    /// Documents skipped by the offset.
    public let skipped: Int
}

/// An entry of a collection listing: a document, or the name of a missing one with children.
public enum ListedDocument: Sendable {
    case found(Document)
    case missing(ResourcePath)

    public var path: ResourcePath {
        switch self {
        case .found(let doc): doc.path
        case .missing(let path): path
        }
    }
}
