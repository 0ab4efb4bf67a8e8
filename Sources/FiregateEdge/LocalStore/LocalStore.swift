import FiregateBackend
import FiregateModel
import FiregateStore

/// The client's local persistence, as the SDK's LocalStore (local/local_store_impl.ts) holds it:
/// the remote document cache (with its local indexes), the mutation queues, the target cache,
/// the injected storage faults and the garbage collector's record, and the storage that keeps
/// them for a persistent client.
///
/// Its state changes only through the verbs below, each of which saves what it changed, so no
/// other code writes to the client's storage. Swift's `private(set)` reaches one file, which is
/// why every verb that changes the store lives here; the saves they share are in
/// `LocalStore+Persistence.swift`.
struct LocalStore {
    /// Where a persistent client saves; nil keeps everything in memory.
    let storage: EdgeCacheStorage?
    /// The settings' persistence: a memory client's cache is its own persistence.
    private(set) var persistent: Bool
    /// The server's clock: the version of a document the watch says is missing.
    let clock: ServerClock
    private(set) var remoteDocuments = RemoteDocumentCache()
    /// Reads answered from the cache and documents dropped from it, for metrics.
    private(set) var cacheStatistics = CacheStatistics()
    /// The signed-in user's mutation queue.
    private(set) var mutationQueue = MutationQueue()
    /// Other users' queues, kept until that user signs in again (the SDK's per-user queues).
    private(set) var queuesByUser: [String: MutationQueue] = [:]
    /// Every query listened to, its server result's keys, and LRU sequence numbers.
    private(set) var targetCache = TargetCache()
    /// Loaded bundles and their named queries.
    private(set) var bundles = BundleCache()
    private(set) var gcRuns = 0
    private(set) var lastGC: JSON = .null
    /// The SDK's indexAutoCreationEnabled: in memory only, off at every start.
    private(set) var indexAutoCreation = false
    /// Injected persistence failures (the spec tests' `failDatabase`).
    private(set) var faults = StorageFaults()

    init(storage: EdgeCacheStorage?, persistent: Bool, clock: ServerClock) {
        self.storage = storage
        self.persistent = persistent
        self.clock = clock
    }
}

// MARK: Start, settings and restarts

extension LocalStore {
    /// A persistent client's saved state at start; `user` is the signed-in uid it saved (the
    /// queue is split by user when there is one, or when batches name their users). Returns
    /// the restored batches' write states.
    mutating func restore(_ snapshot: EdgeCacheStorage.Snapshot, database: DatabaseID, user: String?) -> WriteOutcomes<WriteState> {
        let states: WriteOutcomes<WriteState>
        (remoteDocuments, mutationQueue, states, targetCache) = LocalStore.restored(snapshot, database: database)
        bundles = snapshot.bundles.map(BundleCache.init(json:)) ?? BundleCache()
        if !snapshot.mutationUsers.isEmpty || user != nil {
            (mutationQueue, queuesByUser) = LocalStore.partition(mutationQueue, users: snapshot.mutationUsers, current: user ?? "")
        }
        return states
    }

    /// The settings' persistence changed (only before the client starts).
    mutating func setPersistent(_ persistent: Bool) {
        self.persistent = persistent
    }

    /// A new instance over the same persistence (terminate, restart): a memory client forgets
    /// everything it held; a persistent one keeps what it saved, and its targets go back to
    /// the tokens saved. Index auto-creation and injected faults are the old instance's.
    mutating func beginNewInstance() {
        if persistent { targetCache.revertToSaved() } else { forgetCache() }
        indexAutoCreation = false
        faults = StorageFaults()
    }

    /// Forgets what is held in memory: every user's queue, the documents and their indexes, the
    /// targets, the bundles (a memory client's restart, clearPersistence). Storage is untouched.
    mutating func forgetCache() {
        mutationQueue.removeAll()
        queuesByUser.removeAll()
        remoteDocuments.removeAll()
        remoteDocuments.indexes.removeAll()
        targetCache.removeAll()
        bundles = BundleCache()
    }

    /// Another tab's sync engine takes over: targets carry the tokens saved, not the old
    /// primary's newer unsaved ones.
    mutating func revertTargetsToSaved() {
        targetCache.revertToSaved()
    }

    /// The failures injected now (`PUT /clients/{id}/faults`, or the new primary tab's).
    mutating func updateFaults(_ json: JSON) throws(FiregateError) {
        try faults.update(json)
    }

    mutating func setFaults(_ faults: StorageFaults) {
        self.faults = faults
    }
}

// MARK: Writes and users

extension LocalStore {
    /// Whether the signed-in user's queue still holds the batch (not yet answered).
    func isQueued(_ batchID: Int64) -> Bool { mutationQueue.contains(batchID) }

    /// The id the next batch of any user's queue gets: ids stay unique over every queue.
    var nextBatchID: Int64 { queuesByUser.values.reduce(mutationQueue.nextID) { Swift.max($0, $1.nextID) } }

    /// localStoreWriteLocally: queues a batch for `user` (the signed-in one's queue, or another
    /// user's, sent once that user signs in).
    mutating func queueWrite(_ writes: [Write], localWriteTime: Timestamp, user: String, currentUser: String) -> MutationBatch {
        guard user != currentUser else { return mutationQueue.add(writes: writes, localWriteTime: localWriteTime) }
        var parked = queuesByUser[user] ?? MutationQueue()
        parked.reserveIDs(from: nextBatchID)
        let batch = parked.add(writes: writes, localWriteTime: localWriteTime)
        queuesByUser[user] = parked
        mutationQueue.reserveIDs(from: parked.nextID)
        return batch
    }

    /// handleUserChange: the previous user's queue is parked, the new user's (from an earlier
    /// sign-in) becomes the one sent.
    mutating func switchUser(from previousUser: String, to currentUser: String) {
        let nextID = nextBatchID
        if !mutationQueue.isEmpty { queuesByUser[previousUser] = mutationQueue }
        var incoming = queuesByUser.removeValue(forKey: currentUser) ?? MutationQueue()
        incoming.reserveIDs(from: nextID)
        mutationQueue = incoming
    }

    /// Removes a batch from whichever user's queue holds it (an answer may arrive after the
    /// user changed).
    mutating func removeBatch(_ batchID: Int64) -> MutationBatch? {
        if let batch = mutationQueue.remove(batchID) { return batch }
        for user in Array(queuesByUser.keys) {
            guard let batch = queuesByUser[user]?.remove(batchID) else { continue }
            if queuesByUser[user]?.isEmpty == true { queuesByUser.removeValue(forKey: user) }
            return batch
        }
        return nil
    }

    /// The server committed the batch (whose commit removed it from the on-disk queue): drops it
    /// from the queue and keeps the committed version of each document until the watch confirms
    /// it. False when the batch was no longer queued.
    mutating func acknowledgeBatch(_ batch: MutationBatch, _ result: CommitResult, database: DatabaseID) -> Bool {
        guard removeBatch(batch.id) != nil else { return false }
        // The batch no longer holds its documents (removeMutationReference).
        targetCache.beginOperation()
        for path in batch.paths { targetCache.touch(path) }
        for path in batch.paths {
            let base = remoteDocuments[path]
            if let base, base.version >= result.commitTime {
                persistSequence(path)
                continue
            }
            var current = base?.document
            for write in batch.writes where write.path == path {
                if let outcome = try? write.apply(to: current, commitTime: result.commitTime, database: database, serverTime: { _ in .timestamp(result.commitTime) }) {
                    current = outcome.document
                }
            }
            remoteDocuments.set(path, current.map { .found($0, committed: true) } ?? .missing(version: result.commitTime, committed: true))
            persistRemote(path)
        }
        return true
    }

    /// The server refused the batch for good: drops it (from disk too), so the local view
    /// reverts. False when the batch was no longer queued.
    mutating func rejectBatch(_ batch: MutationBatch) -> Bool {
        guard removeBatch(batch.id) != nil else { return false }
        deleteSavedMutation(batch.id)
        targetCache.beginOperation()
        for path in batch.paths { touch(path) }
        return true
    }

    /// Removes a document from the cache (and from disk), counted as an eviction.
    mutating func evict(_ path: ResourcePath) {
        remoteDocuments.set(path, nil)
        targetCache.forget(path)
        cacheStatistics.evictions += 1
        persistRemote(path)
    }

    /// The SDK's remote document cache counters: a read answered from the cache, or one it
    /// could not answer.
    mutating func noteCacheRead(hit: Bool) {
        if hit { cacheStatistics.hits += 1 } else { cacheStatistics.misses += 1 }
    }
}

// MARK: Targets

extension LocalStore {
    /// Starts an operation: what it references gets the next LRU sequence number.
    mutating func beginOperation() {
        targetCache.beginOperation()
    }

    /// allocateTarget: a listen's target, kept (and saved) if it is new.
    mutating func allocateTarget(_ queryID: String) {
        targetCache.beginOperation()
        guard targetCache.targets[queryID] == nil else { return }
        targetCache.allocate(queryID)
        persistTarget(queryID)
    }

    /// releaseTarget: the target stays cached with its last use, and a bundle no longer holds
    /// it. If saving that fails (`.releaseTarget` injected) the SDK goes on, and what was saved
    /// before (its older resume token) is what a re-listen finds.
    mutating func releaseTarget(_ queryID: String) {
        targetCache.release(queryID)
        if bundles.heldTargets.contains(queryID) {
            bundles.release(queryID)
            persistBundles()
        }
        if faults.fails(.releaseTarget) {
            targetCache.revertToSaved(queryID)
        } else {
            persistTarget(queryID)
        }
    }

    /// Each target takes its added and removed keys and its resume token (reset after an
    /// existence-filter mismatch); then each document is taken by the remote-document rule
    /// (`acceptRemote`). Returns the documents whose cached version changed.
    @discardableResult
    mutating func applyRemoteEvent(_ event: RemoteEvent) -> Set<ResourcePath> {
        targetCache.beginOperation()
        targetCache.noteRemoteSnapshot(event.snapshotVersion)
        for (targetID, change) in event.targetChanges.sorted(by: { $0.key < $1.key }) {
            guard let queryID = targetCache.queryIDs[targetID], let old = targetCache.targets[queryID] else { continue }
            let joined = change.added.subtracting(old.documents), left = change.removed.intersection(old.documents)
            for path in targetCache.applyServerChanges(queryID, joined: joined, left: left) where remoteDocuments[path] != nil { persistSequence(path) }
            if event.targetMismatches[targetID] != nil {
                targetCache.setResumeToken(queryID, "", version: .zero)
            } else if !change.resumeToken.isEmpty {
                targetCache.setResumeToken(queryID, change.resumeToken, version: event.snapshotVersion)
            }
            // As the SDK: a new token alone is written at most every 5 minutes (shouldPersistTargetData).
            let changedDocuments = !change.added.isEmpty || !change.modified.isEmpty || !change.removed.isEmpty
            let tokenAge = event.snapshotVersion.microseconds - old.snapshotVersion.microseconds
            if old.resumeToken.isEmpty || changedDocuments || tokenAge >= 300_000_000 {
                // A target with a saved result saves only what changed, so the cost follows the change.
                persistTarget(queryID, changed: old.synced ? (joined, left) : nil)
            }
        }
        var changed = Set<ResourcePath>()
        for (path, update) in event.documentUpdates where acceptRemote(path, update) { changed.insert(path) }
        return changed
    }

    /// The live watch's word on a document (nil: it does not exist, as of `deletedAt` — a
    /// commit's time — or of now), taken by the same rule as the scripted watch's and a bundle's.
    mutating func acceptFromWatch(_ path: ResourcePath, _ document: Document?, deletedAt: Timestamp? = nil) {
        acceptRemote(path, document.map { .found($0, committed: false) } ?? .missing(version: deletedAt ?? clock.now()))
    }

    /// A document from either watch or a bundle, by the SDK's rule (populateDocumentChangeBuffer): taken
    /// when nothing is cached, when newer, or at the same version as one derived from an
    /// acknowledged write; "missing at version 0" (access lost) drops the document. Returns
    /// whether the cache changed.
    @discardableResult
    mutating func acceptRemote(_ path: ResourcePath, _ update: RemoteDocument) -> Bool {
        targetCache.touch(path)
        if case .missing(let version, _) = update, version == .zero {
            guard remoteDocuments[path] != nil else { return false }
            remoteDocuments.set(path, nil)
            persistRemote(path)
            return true
        }
        if let existing = remoteDocuments[path] {
            let derivedFromWrite = switch existing {
            case .found(_, let committed), .missing(_, let committed): committed
            }
            guard update.version > existing.version || (update.version == existing.version && derivedFromWrite) else { return false }
        }
        remoteDocuments.set(path, update)
        persistRemote(path)
        return true
    }

    /// The cached document was referenced by the current operation (LRU bookkeeping).
    mutating func touch(_ path: ResourcePath) {
        guard remoteDocuments[path] != nil else { return }
        targetCache.touch(path)
        persistSequence(path)
    }

    /// Saves a target: whole, or (`changed`: the keys that joined and left its result since it was
    /// last saved) its position and just those keys, so a commit costs its change, not the size
    /// of the result.
    mutating func persistTarget(_ queryID: String, changed: (joined: Set<ResourcePath>, left: Set<ResourcePath>)? = nil) {
        // A memory cache is its own persistence: what it stored is what a re-listen finds.
        targetCache.noteSaved(queryID)
        guard persistent, let storage else { return }
        if let changed, let target = targetCache.targets[queryID] {
            let documents = target.documents
            storage.saveTargetPosition(.init(query: queryID, sequenceNumber: target.sequenceNumber, synced: target.synced, targetID: target.targetID,
                                             resumeToken: target.resumeToken, snapshotVersion: target.snapshotVersion),
                                       joined: Array(changed.joined), left: Array(changed.left)) { Array(documents) }
        } else if let target = targetCache.targets[queryID] {
            storage.saveTarget(EdgeCacheStorage.StoredTarget(query: queryID, sequenceNumber: target.sequenceNumber, synced: target.synced,
                                                             documents: Array(target.documents), targetID: target.targetID,
                                                             resumeToken: target.resumeToken, snapshotVersion: target.snapshotVersion))
        } else {
            storage.deleteTargets([queryID])
        }
    }
}

// MARK: Bundles

/// A bundle entering the local store (local_store_impl.ts: localStoreApplyBundledDocuments,
/// localStoreSaveNamedQuery, localStoreSaveBundle): its documents by the remote-document rule,
/// held by the bundle's umbrella target, and its named queries as targets that resume from the
/// bundle's read time.
extension LocalStore {
    /// The target that holds a bundle's documents (`__bundle__/docs/<id>`), so a collector does
    /// not take them while nothing listens.
    static func umbrellaQuery(_ bundleID: String) -> Query {
        Query(parent: ResourcePath(["__bundle__", "docs"]), collectionID: bundleID)
    }

    /// Applies the bundle's documents; returns those whose cached version changed.
    mutating func applyBundledDocuments(_ bundle: FirestoreBundle) -> Set<ResourcePath> {
        targetCache.beginOperation()
        let umbrella = LocalStore.umbrellaQuery(bundle.metadata.id).targetCanonicalID
        allocateBundleTarget(umbrella)
        var changed = Set<ResourcePath>()
        for bundled in bundle.documents {
            let update: RemoteDocument = bundled.document.map { .found($0, committed: false) } ?? .missing(version: bundled.readTime)
            if acceptRemote(bundled.path, update) { changed.insert(bundled.path) }
        }
        targetCache.applyServerResult(umbrella, documents: Set(bundle.documents.map(\.path)))
        for path in targetCache.targets[umbrella]?.documents ?? [] { persistSequence(path) }
        persistTarget(umbrella)
        return changed
    }

    /// Saves a named query. Its target is allocated now (it resumes from the bundle's read time
    /// when listened to); when the read time is newer than what the target has, the target takes
    /// it, with `documents` as its keys.
    mutating func saveNamedQuery(_ named: FirestoreBundle.NamedQuery, query: Query, documents: Set<ResourcePath>) {
        let queryID = query.targetCanonicalID
        allocateBundleTarget(queryID)
        if let target = targetCache.targets[queryID], target.snapshotVersion < named.readTime {
            targetCache.applyServerResult(queryID, documents: documents, synced: target.synced)
            targetCache.setResumeToken(queryID, "", version: named.readTime)
            persistTarget(queryID)
        }
        bundles.save(named)
    }

    /// localStoreSaveBundle: a bundle with this id and an older or equal create time is skipped
    /// from now on.
    mutating func noteBundleLoaded(_ metadata: FirestoreBundle.Metadata) {
        bundles.noteLoaded(metadata)
        persistBundles()
    }

    /// A target a bundle needs; one it allocates is held until a listener releases it.
    private mutating func allocateBundleTarget(_ queryID: String) {
        guard targetCache.targets[queryID] == nil else { return }
        targetCache.allocate(queryID)
        bundles.hold(queryID)
        persistTarget(queryID)
    }
}

// MARK: Garbage collection and indexes

extension LocalStore {
    /// The eager collector's pass: targets no listener holds go (a bundle's stay until a
    /// listener releases them), then documents nothing retains or holds.
    mutating func collectEagerGarbage(activeQueries: Set<String>, retained: Set<ResourcePath>) {
        for queryID in targetCache.targets.keys where !activeQueries.contains(queryID) && !bundles.heldTargets.contains(queryID) {
            targetCache.remove(queryID)
        }
        for path in remoteDocuments.entries.keys where !retained.contains(path) && !targetCache.isInTarget(path) {
            evict(path)
        }
    }

    /// Carries out an LRU pass's plan: its targets and documents leave the cache and the disk.
    mutating func removeCollected(_ plan: LruGarbageCollector.Plan) {
        for queryID in plan.targets { targetCache.remove(queryID) }
        deleteSavedTargets(plan.targets)
        for path in plan.documents { evict(path) }
    }

    /// A pass that ran, for the client's state (`gc.runs`, `gc.lastRun`).
    mutating func noteGarbageCollected(_ result: JSON) {
        gcRuns += 1
        lastGC = result
    }

    /// `PUT /clients/{id}/indexes`: the configured indexes, built over the cache.
    mutating func configureIndexes(_ parsed: [FieldIndex], database: DatabaseID) {
        remoteDocuments.indexes.configure(parsed, documents: remoteDocuments.entries, database: database)
    }

    /// An index the SDK created for a query that scanned too much.
    mutating func addAutoCreatedIndex(_ index: FieldIndex, database: DatabaseID) {
        remoteDocuments.indexes.addAutoCreated(index, documents: remoteDocuments.entries, database: database)
    }

    mutating func removeAllIndexes() {
        remoteDocuments.indexes.removeAll()
    }

    mutating func setIndexAutoCreation(_ enabled: Bool) {
        indexAutoCreation = enabled
    }

    /// Brings the indexes up to the cache before a local view reads them.
    mutating func compactIndexes() {
        remoteDocuments.indexes.compact()
    }
}
