import FiregateBackend
@testable import FiregateEdge
import FiregateModel
import FiregateStore
import XCTest

/// The local store on its own, without a backend: what the server's answers do to the cache and
/// the queue, and a persistent store's round trip through its storage.
final class LocalStoreTests: XCTestCase {
    let database = DatabaseID(project: "p")
    let path = ResourcePath(["c", "d"])

    func time(_ seconds: Int64) -> Timestamp { Timestamp(seconds: seconds, nanos: 0) }

    func doc(_ n: Int64, at seconds: Int64) -> Document {
        Document(path: path, fields: ["n": .integer(n)], createTime: time(1), updateTime: time(seconds))
    }

    func set(_ n: Int64) -> Write {
        Write(path: path, operation: .update(fields: ["n": .integer(n)], mask: nil), precondition: Precondition())
    }

    func memoryStore() -> LocalStore {
        LocalStore(storage: nil, persistent: false, clock: ServerClock())
    }

    func testAnAcknowledgedBatchKeepsItsCommittedVersionUntilTheWatchConfirmsIt() {
        var store = memoryStore()
        store.acceptFromWatch(path, doc(0, at: 5))
        let batch = store.queueWrite([set(1)], localWriteTime: time(6), user: "", currentUser: "")
        let result = CommitResult(commitTime: time(7), writeResults: [WriteResult(updateTime: time(7), transformResults: nil)])

        XCTAssertTrue(store.acknowledgeBatch(batch, result, database: database))
        XCTAssertTrue(store.mutationQueue.isEmpty)
        guard case .found(let committed, committed: true)? = store.remoteDocuments[path] else {
            return XCTFail("expected the committed version, got \(String(describing: store.remoteDocuments[path]))")
        }
        XCTAssertEqual(committed.fields["n"], .integer(1))
        XCTAssertEqual(store.remoteDocuments[path]?.version, time(7))

        // An older server version does not replace it; the watch's own version confirms it.
        store.acceptFromWatch(path, doc(0, at: 5))
        XCTAssertEqual(store.remoteDocuments[path], .found(committed, committed: true))
        store.acceptFromWatch(path, doc(1, at: 7))
        XCTAssertEqual(store.remoteDocuments[path], .found(doc(1, at: 7), committed: false))

        XCTAssertFalse(store.acknowledgeBatch(batch, result, database: database), "a batch is answered once")
    }

    func testARejectedBatchLeavesTheCacheAsTheServerHasIt() {
        var store = memoryStore()
        store.acceptFromWatch(path, doc(0, at: 5))
        let batch = store.queueWrite([set(9)], localWriteTime: time(6), user: "", currentUser: "")
        let before = LocalViewBuilder(database: database, remote: store.remoteDocuments, queue: store.mutationQueue).document(path)
        XCTAssertEqual(before?.document.fields["n"], .integer(9), "the local view shows the pending write")

        XCTAssertTrue(store.rejectBatch(batch))
        XCTAssertTrue(store.mutationQueue.isEmpty)
        XCTAssertEqual(store.remoteDocuments[path], .found(doc(0, at: 5), committed: false))
        let after = LocalViewBuilder(database: database, remote: store.remoteDocuments, queue: store.mutationQueue).document(path)
        XCTAssertEqual(after?.document.fields["n"], .integer(0), "the local view reverts")
        XCTAssertFalse(store.rejectBatch(batch))
    }

    func testOtherUsersBatchesAreFoundInTheirQueues() {
        var store = memoryStore()
        let mine = store.queueWrite([set(1)], localWriteTime: time(6), user: "ann", currentUser: "ann")
        let theirs = store.queueWrite([set(3)], localWriteTime: time(6), user: "bob", currentUser: "ann")
        XCTAssertGreaterThan(theirs.id, mine.id, "batch ids are unique over every user's queue")
        XCTAssertEqual(store.mutationQueue.batches.map(\.id), [mine.id], "another user's batch is parked")
        XCTAssertEqual(store.nextBatchID, theirs.id + 1)
        XCTAssertEqual(store.removeBatch(theirs.id)?.id, theirs.id)
        XCTAssertNil(store.queuesByUser["bob"], "an emptied queue is dropped")
    }

    func testASignInSwitchesTheQueueThatIsSent() {
        var store = memoryStore()
        let ann = store.queueWrite([set(1)], localWriteTime: time(6), user: "ann", currentUser: "ann")
        store.switchUser(from: "ann", to: "bob")
        XCTAssertTrue(store.mutationQueue.isEmpty)
        XCTAssertEqual(store.queuesByUser["ann"]?.batches.map(\.id), [ann.id])
        let bob = store.queueWrite([set(2)], localWriteTime: time(7), user: "bob", currentUser: "bob")
        XCTAssertGreaterThan(bob.id, ann.id)
        store.switchUser(from: "bob", to: "ann")
        XCTAssertEqual(store.mutationQueue.batches.map(\.id), [ann.id])
        XCTAssertEqual(store.queuesByUser["bob"]?.batches.map(\.id), [bob.id])
    }

    func testTargetsAreAllocatedReleasedAndCollected() {
        var store = memoryStore()
        let cities = Query(collectionID: "cities").targetCanonicalID
        store.allocateTarget(cities)
        let targetID = store.targetCache.targets[cities]?.targetID
        store.allocateTarget(cities)
        XCTAssertEqual(store.targetCache.targets[cities]?.targetID, targetID, "an allocated target keeps its id")
        store.acceptFromWatch(path, doc(0, at: 5))
        store.releaseTarget(cities)
        XCTAssertNotNil(store.targetCache.targets[cities], "a released target stays cached")
        store.collectEagerGarbage(activeQueries: [], retained: [])
        XCTAssertNil(store.targetCache.targets[cities])
        XCTAssertNil(store.remoteDocuments[path])
        XCTAssertEqual(store.cacheStatistics.evictions, 1)
        store.noteCacheRead(hit: true)
        store.noteCacheRead(hit: false)
        XCTAssertEqual([store.cacheStatistics.hits, store.cacheStatistics.misses], [1, 1])
    }

    func testANewInstanceForgetsAMemoryCacheAndTheOldInstancesFaults() throws {
        var store = memoryStore()
        try store.updateFaults(["storage": ["Release target"]])
        XCTAssertTrue(store.faults.fails(.releaseTarget))
        store.setIndexAutoCreation(true)
        store.acceptFromWatch(path, doc(0, at: 5))
        _ = store.queueWrite([set(1)], localWriteTime: time(6), user: "", currentUser: "")
        store.beginNewInstance()
        XCTAssertNil(store.remoteDocuments[path])
        XCTAssertTrue(store.mutationQueue.isEmpty)
        XCTAssertFalse(store.faults.fails(.releaseTarget))
        XCTAssertFalse(store.indexAutoCreation)
    }

    func testEvictionForgetsTheDocumentAndCountsIt() {
        var store = memoryStore()
        store.acceptFromWatch(path, doc(0, at: 5))
        store.evict(path)
        XCTAssertNil(store.remoteDocuments[path])
        XCTAssertEqual(store.cacheStatistics.evictions, 1)
    }

    /// One rule for both watches and bundles (populateDocumentChangeBuffer): newer wins; the same
    /// version only replaces one derived from an acknowledged write, so the watch's word on a
    /// committed deletion clears its committed flag; an older one is ignored.
    func testTheLiveWatchTakesDocumentsByTheSDKsRule() {
        var store = memoryStore()
        store.acceptFromWatch(path, doc(1, at: 5))
        store.acceptFromWatch(path, doc(0, at: 4))
        XCTAssertEqual(store.remoteDocuments[path], .found(doc(1, at: 5), committed: false), "an older version is ignored")
        // A deletion the server acknowledged at 7.
        let delete = store.queueWrite([Write(path: path, operation: .delete, precondition: Precondition())], localWriteTime: time(6), user: "", currentUser: "")
        XCTAssertTrue(store.acknowledgeBatch(delete, CommitResult(commitTime: time(7), writeResults: [WriteResult(updateTime: time(7), transformResults: nil)]),
                                             database: database))
        store.acceptFromWatch(path, nil, deletedAt: time(6))
        XCTAssertEqual(store.remoteDocuments[path], .missing(version: time(7), committed: true), "an older deletion is ignored")
        store.acceptFromWatch(path, nil, deletedAt: time(7))
        XCTAssertEqual(store.remoteDocuments[path], .missing(version: time(7), committed: false), "the watch confirms the committed deletion")
        store.acceptFromWatch(path, nil, deletedAt: time(7))
        XCTAssertEqual(store.remoteDocuments[path], .missing(version: time(7), committed: false))
    }

    func testAPersistentStoreComesBackFromItsStorage() async throws {
        let sqlite = try SQLiteStore(directory: nil, migrations: EdgeCacheStorage.migrations)
        let storage = EdgeCacheStorage(store: sqlite, clientID: "A")
        var store = LocalStore(storage: storage, persistent: true, clock: ServerClock())
        store.saveSettings(["project": "p"])   // a client is on disk once its settings are
        store.acceptFromWatch(path, doc(4, at: 5))
        let batch = store.queueWrite([set(5)], localWriteTime: time(6), user: "", currentUser: "")
        let writes = JSON.array(batch.writes.map { $0.json(database: database) })
        let saving = store
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            saving.saveMutation(batch, writes: writes, uid: "") { continuation.resume(with: $0) }
        }
        try await storage.flush()

        let snapshot = try XCTUnwrap(try storage.load())
        let (remote, queue, _, _) = LocalStore.restored(snapshot, database: database)
        XCTAssertEqual(remote[path], .found(doc(4, at: 5), committed: false))
        XCTAssertEqual(queue.batches.map(\.id), [batch.id])
        XCTAssertEqual(queue.batches.first?.writes, [set(5)])
    }
}
