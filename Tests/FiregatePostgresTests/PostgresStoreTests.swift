@testable import FiregatePostgres
import FiregateModel
import PostgresNIO
import FiregateStore
import Synchronization
import XCTest

/// The store against a real PostgreSQL: what a commit writes, what a reopened store loads, and
/// the fence that keeps a replica that lost a scope from writing it.
final class PostgresStoreTests: XCTestCase {
    private let db = DatabaseID(project: "p", database: "(default)")

    private func document(_ path: String, _ n: Int64) -> Document {
        let now = Timestamp(microseconds: Int64(Date().timeIntervalSince1970 * 1_000_000))
        return Document(path: ResourcePath(ResourcePath.segments(of: path)), fields: ["n": .integer(n)], createTime: now, updateTime: now)
    }

    private func commit(_ storage: PostgresDocumentStorage, upserts: [Document], deletes: [ResourcePath] = []) async -> Result<Void, any Error> {
        await withCheckedContinuation { continuation in
            storage.enqueue(DocumentPersistBatch(database: db, upserts: upserts, deletes: deletes)) { continuation.resume(returning: $0) }
        }
    }

    private func status(_ result: Result<Void, any Error>) -> Status? {
        if case .failure(let error) = result { return (error as? FiregateError)?.status ?? .unknown }
        return nil
    }

    func testCommittedDocumentsAndTreeRowsAreThereForTheNextStoreWithALogRowEach() async throws {
        let database = try TestDatabase()
        let first = try database.store("r1")
        let documents = PostgresDocumentStorage(store: first)
        let outcome1 = await commit(documents, upserts: [document("c/a", 1), document("c/b", 2)])
        XCTAssertNil(status(outcome1))
        let outcome2 = await commit(documents, upserts: [document("c/a", 3)], deletes: [ResourcePath(["c", "b"])])
        XCTAssertNil(status(outcome2))
        let tree = PostgresTreeStorage(store: first)
        try await tree.commit([TreeStorageBatch(namespace: "ns", operations: [
            .putRow(TreeStorageRow(path: "x/y", value: "1", priority: nil)), .putRow(TreeStorageRow(path: "x/z", value: "\"s\"", priority: "2")),
        ])])
        try await tree.commit([TreeStorageBatch(namespace: "ns", operations: [.deleteSubtree("x/y")])])
        first.close()

        let second = try database.store("r1")
        defer { second.close() }
        let loaded = try PostgresDocumentStorage(store: second).loadAll()
        XCTAssertEqual(loaded.map(\.1.path.canonical), ["c/a"])
        XCTAssertEqual(loaded.first?.1.fields["n"], .integer(3))
        XCTAssertEqual(try PostgresTreeStorage(store: second).loadRows(namespace: "ns"), [TreeStorageRow(path: "x/z", value: "\"s\"", priority: "2")])
        XCTAssertEqual(try PostgresTreeStorage(store: second).namespaces(), ["ns"])
        XCTAssertEqual(try database.sql("SELECT scope, seq::text FROM fg_log ORDER BY scope, seq"),
                       [["d:p/(default)", "1"], ["d:p/(default)", "2"], ["t:ns", "1"], ["t:ns", "2"]])
        // The reopened store continues the log where it was.
        let outcome3 = await commit(PostgresDocumentStorage(store: second), upserts: [document("c/c", 4)])
        XCTAssertNil(status(outcome3))
        XCTAssertEqual(try database.sql("SELECT max(seq)::text FROM fg_log WHERE scope = 'd:p/(default)'"), [["3"]])
    }

    func testAReplicaCannotWriteAScopeAnotherLiveReplicaOwns() async throws {
        let database = try TestDatabase()
        let a = try database.store("a"), b = try database.store("b")
        defer { a.close(); b.close() }
        let outcome4 = await commit(PostgresDocumentStorage(store: a), upserts: [document("c/a", 1)])
        XCTAssertNil(status(outcome4))
        let refused = await commit(PostgresDocumentStorage(store: b), upserts: [document("c/a", 2)])
        XCTAssertEqual(status(refused), .unavailable)
        XCTAssertEqual(try database.sql("SELECT convert_from(fields, 'UTF8') FROM fg_documents"), [[#"{"n":{"integerValue":"1"}}"#]])
    }

    func testWritesGoToTheLiveOwnerAndToNobodyOnceItsLeaseRanOut() async throws {
        let database = try TestDatabase()
        let a = try database.store("a"), b = try database.store("b")
        defer { a.close(); b.close() }
        let scope = ScopeLease.Scope.documents(project: "p", database: "(default)")
        // Nobody owns it: either may take it.
        XCTAssertNil(try a.owner(of: scope))
        XCTAssertNil(try b.owner(of: scope))
        let outcome = await commit(PostgresDocumentStorage(store: a), upserts: [document("c/a", 1)])
        XCTAssertNil(status(outcome))
        XCTAssertTrue(a.holdsLease(of: scope))
        XCTAssertFalse(b.holdsLease(of: scope))
        XCTAssertNil(try a.owner(of: scope), "the owner serves its own writes")
        XCTAssertEqual(try b.owner(of: scope), ReplicaAddress(id: "a", address: "http://a"))
        XCTAssertNil(try b.owner(of: .tree(namespace: "p")), "a namespace is a scope of its own")
        XCTAssertEqual(a.logSeq(of: scope), 1)
        XCTAssertNil(b.logSeq(of: scope), "b holds nothing of it in memory")
        try database.sql("UPDATE fg_heads SET lease_until = now() - interval '1 second'")
        XCTAssertNil(try b.owner(of: scope), "an expired lease sends writes nowhere: b takes it")
    }

    func testADeadReplicasOnDisconnectOperationsAreClaimedOnceByOneLiveReplicaAndOutliveADeadClaimer() async throws {
        // A 6 s lease renews every 2 s: a live replica counts as dead only after 6 s without a
        // heartbeat. A 2 s lease let one slow CI tick (a debug build on 2 cores) pass a live
        // claimer for dead, and its claims were claimed again.
        let lease = 6
        let database = try TestDatabase()
        let a = try database.store("a", leaseSeconds: lease), b = try database.store("b", leaseSeconds: lease), c = try database.store("c", leaseSeconds: lease)
        let ran = Mutex<[(replica: String, claim: OrphanedDisconnect)]>([])
        for store in [b, c] {
            let name = store.replicaID
            store.onOrphanedDisconnects { claim in ran.withLock { $0.append((name, claim)) } }
        }
        func text(_ claim: OrphanedDisconnect) -> String { "\(claim.namespace):\(String(decoding: claim.operations, as: UTF8.self)) from \(claim.done)" }
        /// Waits until `count` claims have run (or 3 leases have gone), then one renewal more, so
        /// that a second claim of the same operations would have been seen.
        func claims(reaching count: Int) async throws -> [(replica: String, claim: OrphanedDisconnect)] {
            let deadline = ContinuousClock.now + .seconds(3 * lease)
            while ran.withLock({ $0.count }) < count && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(100)) }
            try await Task.sleep(for: .seconds(Double(lease) / 3 + 1))
            return ran.withLock { $0 }
        }
        a.keepOnDisconnect(connection: "c1", namespace: "ns", operations: Array("[1,2]".utf8))
        a.keepOnDisconnect(connection: "c2", namespace: "ns", operations: Array("[2]".utf8))
        a.keepOnDisconnect(connection: "c2", namespace: "ns", operations: nil)   // ran by a itself
        a.keepOnDisconnect(connection: "c3", namespace: "other", operations: Array("[3]".utf8))
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertEqual(try database.sql("SELECT connection FROM fg_ondisconnect ORDER BY connection"), [["c1"], ["c3"]])
        try await Task.sleep(for: .seconds(Double(lease) / 3 + 0.5))
        XCTAssertTrue(ran.withLock { $0 }.isEmpty, "a lives: nobody runs its operations")
        a.close()   // its heartbeat stops
        try database.sql("UPDATE fg_replicas SET heartbeat_at = now() - interval '1 minute' WHERE replica = 'a'")
        let first = try await claims(reaching: 2)
        XCTAssertEqual(first.map { text($0.claim) }.sorted(), ["ns:[1,2] from 0", "other:[3] from 0"], "each set once, by one replica")
        // Claimed, the rows are the claimer's own (under the key it was given), not gone.
        let rows: [String] = try database.sql("SELECT replica || ' ' || connection FROM fg_ondisconnect").map { $0[0] ?? "" }
        let claimed: [String] = first.map { "\($0.replica) \($0.claim.connection)" }
        XCTAssertEqual(rows.sorted(), claimed.sorted())
        // The claimer of c1 runs its first operation (its progress stored), then dies.
        let c1 = try XCTUnwrap(first.first { $0.claim.namespace == "ns" })
        let claimer = c1.replica == "b" ? b : c, survivor = c1.replica == "b" ? c : b
        claimer.recordDisconnectProgress(DisconnectProgress(replica: claimer.replicaID, connection: c1.claim.connection, done: 1, total: 2))
        claimer.recordDisconnectProgress(DisconnectProgress(replica: claimer.replicaID, connection: c1.claim.connection, done: 0, total: 2))
        try await Task.sleep(for: .milliseconds(500))
        claimer.close()
        try database.sql("UPDATE fg_replicas SET heartbeat_at = now() - interval '1 minute' WHERE replica = '\(claimer.replicaID)'")
        let all = try await claims(reaching: first.count + (first.filter { $0.replica == claimer.replicaID }.count))
        let second = all.dropFirst(first.count).filter { $0.claim.namespace == "ns" }
        XCTAssertEqual(second.map { "\($0.replica) \(text($0.claim))" }, ["\(survivor.replicaID) ns:[1,2] from 1"],
                       "the rest outlived its claimer, from where it stopped (progress only moves forward)")
        survivor.close()
    }

    func testAReapersProgressIsStoredWithTheOperationsWriteOrNotAtAll() async throws {
        let database = try TestDatabase()
        let a = try database.store("a"), b = try database.store("b")
        defer { a.close(); b.close() }
        try database.sql("INSERT INTO fg_ondisconnect (replica, connection, namespace, operations) VALUES ('a', 'k', 'ns', '[1,2]')")
        func write(_ storage: PostgresTreeStorage, done: Int) async -> Status? {
            let progress = DisconnectProgress(replica: "a", connection: "k", done: done, total: 2)
            do {
                try await storage.commit([TreeStorageBatch(namespace: "ns", operations: [.putRow(TreeStorageRow(path: "p", value: "\(done)", priority: nil))],
                                                           progress: progress)])
                return nil
            } catch {
                return (error as? FiregateError)?.status ?? .unknown
            }
        }
        let first = await write(PostgresTreeStorage(store: a), done: 1)
        XCTAssertNil(first)
        XCTAssertEqual(try database.sql("SELECT done::text FROM fg_ondisconnect"), [["1"]])
        // The same operation again (a reaper that did not know it ran): not made.
        let again = await write(PostgresTreeStorage(store: a), done: 1)
        XCTAssertEqual(again, .unavailable)
        XCTAssertEqual(try a.disconnectClaim(connection: "k"), 1)
        // A claim another replica took since (this one was paused): not made either.
        try database.sql("UPDATE fg_ondisconnect SET replica = 'c'")
        let moved = await write(PostgresTreeStorage(store: a), done: 2)
        XCTAssertEqual(moved, .unavailable)
        XCTAssertNil(try a.disconnectClaim(connection: "k"), "the claim is no longer a's")
        XCTAssertEqual(try database.sql("SELECT value FROM fg_tree_rows WHERE scope = 't:ns' AND path = 'p'"), [["1"]], "neither write was made")
        try database.sql("UPDATE fg_ondisconnect SET replica = 'a'")
        // b does not own the namespace: its write is fenced off, and the progress with it.
        let fenced = await write(PostgresTreeStorage(store: b), done: 2)
        XCTAssertEqual(fenced, .unavailable)
        XCTAssertEqual(try database.sql("SELECT done::text FROM fg_ondisconnect"), [["1"]])
        let last = await write(PostgresTreeStorage(store: a), done: 2)
        XCTAssertNil(last)
        XCTAssertEqual(try database.sql("SELECT count(*)::text FROM fg_ondisconnect"), [["0"]], "the last one's write removes the row")
    }

    func testAnOwnerWhoseLeaseWasTakenOverWritesNothingAndReloadsBeforeWritingAgain() async throws {
        let database = try TestDatabase()
        let a = try database.store("a"), b = try database.store("b")
        defer { a.close(); b.close() }
        let aDocuments = PostgresDocumentStorage(store: a), bDocuments = PostgresDocumentStorage(store: b)
        let outcome5 = await commit(aDocuments, upserts: [document("c/a", 1)])
        XCTAssertNil(status(outcome5))
        // A is paused past its lease (as SIGSTOP would): its lease runs out and B takes over.
        try database.sql("UPDATE fg_heads SET lease_until = now() - interval '1 second'")
        _ = try bDocuments.loadAll()
        let outcome6 = await commit(bDocuments, upserts: [document("c/a", 2)])
        XCTAssertNil(status(outcome6))
        XCTAssertEqual(try database.sql("SELECT owner, owner_epoch::text, seq::text FROM fg_heads"), [["b", "2", "2"]])

        // A wakes up and commits with the epoch it had: fenced, nothing written.
        let stale = await commit(aDocuments, upserts: [document("c/a", 99), document("c/z", 99)])
        XCTAssertEqual(status(stale), .unavailable)
        XCTAssertEqual(try database.sql("SELECT path, convert_from(fields, 'UTF8') FROM fg_documents"), [["c/a", #"{"n":{"integerValue":"2"}}"#]])
        XCTAssertEqual(try database.sql("SELECT seq::text FROM fg_log ORDER BY seq"), [["1"], ["2"]])

        // B's lease runs out too: A may take the scope, but its memory is behind the log, so it
        // must reload before it writes.
        try database.sql("UPDATE fg_heads SET lease_until = now() - interval '1 second'")
        let outcome7 = await commit(aDocuments, upserts: [document("c/a", 5)])
        XCTAssertEqual(status(outcome7), .unavailable)
        let reloaded = await withCheckedContinuation { continuation in
            aDocuments.enqueueLoad(db) { continuation.resume(returning: $0) }
        }
        XCTAssertEqual(try reloaded.get().first?.fields["n"], .integer(2))
        let outcome8 = await commit(aDocuments, upserts: [document("c/a", 5)])
        XCTAssertNil(status(outcome8))
        XCTAssertEqual(try database.sql("SELECT owner, seq::text FROM fg_heads"), [["a", "3"]])
    }

    func testClearIsFencedAndLogged() async throws {
        let database = try TestDatabase()
        let a = try database.store("a")
        defer { a.close() }
        let documents = PostgresDocumentStorage(store: a)
        let outcome9 = await commit(documents, upserts: [document("c/a", 1)])
        XCTAssertNil(status(outcome9))
        let before = try XCTUnwrap(documents.position(db))
        XCTAssertEqual(before.seq, 1)
        let cleared = await withCheckedContinuation { continuation in documents.enqueueClear(db) { continuation.resume(returning: $0) } }
        XCTAssertNil(status(cleared))
        XCTAssertEqual(try database.sql("SELECT count(*)::text FROM fg_documents"), [["0"]])
        // A clear starts a new generation, in the head and in the log row followers read.
        let after = try XCTUnwrap(documents.position(db))
        XCTAssertEqual(after.seq, 2)
        XCTAssertNotEqual(after.generation, before.generation)
        XCTAssertEqual(try database.sql("SELECT generation FROM fg_heads"), [[after.generation]])
        XCTAssertEqual(try database.sql("SELECT seq::text, convert_from(body, 'UTF8') FROM fg_log ORDER BY seq").last,
                       ["2", #"{"clear":true,"generation":"\#(after.generation)"}"#])
    }

    func testASecondReplicaStartingOnTheSameDatabaseFindsTheSchemaInPlace() throws {
        let database = try TestDatabase()
        let a = try database.store("a")
        let b = try database.store("b")
        a.close(); b.close()
        XCTAssertEqual(try database.sql("SELECT id FROM fg_migrations ORDER BY id"), PostgresSchema.steps.map { [$0.id] })
        XCTAssertEqual(try database.sql("SELECT replica FROM fg_replicas ORDER BY replica"), [["a"], ["b"]])
    }

    func testAnEdgeClientsCacheComesBackAndAQueuedBatchLeavesInTheCommitThatAppliesIt() async throws {
        let database = try TestDatabase()
        let store = try database.store("a")
        let cache = EdgeCacheStorage(store: store, clientID: "phone\u{0}1")
        cache.saveSettings(["project": "p"])
        cache.saveDocument(ResourcePath(["c", "a"]), found: document("c/a", 1), committed: true, version: Timestamp(microseconds: 5), sequenceNumber: 3)
        cache.saveTargetPosition(.init(query: "q1", sequenceNumber: 4, synced: true, targetID: 2, resumeToken: "t", snapshotVersion: Timestamp(microseconds: 9)),
                                 documents: { [ResourcePath(["c", "a"])] })
        let saved = await withCheckedContinuation { continuation in
            cache.saveMutation(id: 7, localWriteTime: Timestamp(microseconds: 11), writes: .array([]), uid: "u1") { continuation.resume(returning: $0) }
        }
        XCTAssertNil(status(saved))
        TreeCacheStorage(store: store, clientID: "phone\u{0}1").applyCache([.putRow(TreeStorageRow(path: "x", value: "1", priority: nil))])
        // The batch leaves the queue with the commit that applies it.
        let applied = await withCheckedContinuation { continuation in
            PostgresDocumentStorage(store: store).enqueue(DocumentPersistBatch(database: db, upserts: [document("c/b", 2)], deletes: [],
                                                                                companion: cache.mutationRemoval(id: 7))) { continuation.resume(returning: $0) }
        }
        XCTAssertNil(status(applied))
        try await cache.flush()
        store.close()

        let reopened = try database.store("a")
        defer { reopened.close() }
        let snapshot = try XCTUnwrap(try EdgeCacheStorage(store: reopened, clientID: "phone\u{0}1").load())
        XCTAssertEqual(snapshot.settings, ["project": "p"])
        XCTAssertEqual(snapshot.documents.map(\.path.canonical), ["c/a"])
        XCTAssertEqual(snapshot.documents.first?.sequenceNumber, 3)
        XCTAssertEqual(snapshot.targets.map(\.query), ["q1"])
        XCTAssertEqual(snapshot.targets.first?.documents, [ResourcePath(["c", "a"])])
        XCTAssertEqual(snapshot.targets.first?.resumeToken, "t")
        XCTAssertTrue(snapshot.mutations.isEmpty, "the applied batch is gone from the queue")
        XCTAssertEqual(try TreeCacheStorage(store: reopened, clientID: "phone\u{0}1").load().rows, [TreeStorageRow(path: "x", value: "1", priority: nil)])
        XCTAssertNil(try EdgeCacheStorage(store: reopened, clientID: "other").load())
    }
}
