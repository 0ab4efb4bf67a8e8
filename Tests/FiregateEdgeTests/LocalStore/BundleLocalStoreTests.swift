import FiregateBackend
@testable import FiregateEdge
import FiregateModel
import FiregateStore
import XCTest

/// A bundle entering the local store without a backend: the remote-document rule, the umbrella
/// and named-query targets (their ids and read time), the skip rule, and the saved cache.
final class BundleLocalStoreTests: XCTestCase {
    let database = DatabaseID(project: "p")
    let path = ResourcePath(["c", "a"])

    func time(_ micros: Int64) -> Timestamp { Timestamp(microseconds: micros) }

    func doc(_ value: String, at micros: Int64) -> Document {
        Document(path: path, fields: ["v": .string(value)], createTime: time(1), updateTime: time(micros))
    }

    func bundle(_ document: Document?, createTime: Int64, named: [FirestoreBundle.NamedQuery] = []) throws -> FirestoreBundle {
        let bytes = FirestoreBundle.encode(id: "b", createTime: time(createTime), namedQueries: named,
                                           documents: [.init(path: path, readTime: time(createTime), queries: named.map(\.name), document: document)],
                                           database: database)
        return try FirestoreBundle(bytes: bytes, database: database)
    }

    var collectionQuery: FirestoreBundle.NamedQuery {
        FirestoreBundle.NamedQuery(name: "all", readTime: time(400), parent: database.documentsRoot,
                                   structuredQuery: ["from": [["collectionId": "c"]]], limitToLast: false)
    }

    func testANewerVersionReplacesTheCachedOneAndAnOlderOneIsIgnored() throws {
        var store = LocalStore(storage: nil, persistent: false, clock: ServerClock())
        store.acceptFromWatch(path, doc("server", at: 300))

        XCTAssertEqual(store.applyBundledDocuments(try bundle(doc("old", at: 200), createTime: 200)), [])
        XCTAssertEqual(store.remoteDocuments[path], .found(doc("server", at: 300), committed: false))
        XCTAssertEqual(store.applyBundledDocuments(try bundle(doc("new", at: 500), createTime: 500)), [path])
        XCTAssertEqual(store.remoteDocuments[path], .found(doc("new", at: 500), committed: false))
        // Known missing as of a newer read: the cached version goes.
        XCTAssertEqual(store.applyBundledDocuments(try bundle(nil, createTime: 600)), [path])
        XCTAssertEqual(store.remoteDocuments[path], .missing(version: time(600), committed: false))
    }

    func testTheUmbrellaTargetComesFirstAndTheNamedQueryResumesFromItsReadTime() throws {
        var store = LocalStore(storage: nil, persistent: false, clock: ServerClock())
        let loaded = try bundle(doc("b", at: 500), createTime: 500, named: [collectionQuery])
        _ = store.applyBundledDocuments(loaded)
        let query = try collectionQuery.query(database: database)
        store.saveNamedQuery(collectionQuery, query: query, documents: [path])

        let umbrella = try XCTUnwrap(store.targetCache.targets[LocalStore.umbrellaQuery("b").targetCanonicalID])
        XCTAssertEqual(umbrella.targetID, 2)
        XCTAssertEqual(umbrella.documents, [path])
        let named = try XCTUnwrap(store.targetCache.targets[query.targetCanonicalID])
        XCTAssertEqual(named.targetID, 4)
        XCTAssertEqual(named.snapshotVersion, time(400))
        XCTAssertEqual(named.resumeToken, "")
        XCTAssertEqual(named.documents, [path])
        XCTAssertFalse(named.synced, "a bundle is not a server result: the target has no cached results")
        XCTAssertEqual(store.bundles.namedQueries["all"], collectionQuery)
        XCTAssertEqual(store.bundles.heldTargets.count, 2)

        // A named query older than what the target has keeps the target as it is.
        var older = collectionQuery
        older.readTime = time(300)
        store.saveNamedQuery(older, query: query, documents: [])
        XCTAssertEqual(store.targetCache.targets[query.targetCanonicalID]?.snapshotVersion, time(400))
        XCTAssertEqual(store.targetCache.targets[query.targetCanonicalID]?.documents, [path])
    }

    func testABundleNoNewerThanTheLoadedOneIsSkipped() {
        var cache = BundleCache()
        let loaded = FirestoreBundle.Metadata(id: "b", createTime: time(500), totalDocuments: 1, totalBytes: 10)
        XCTAssertFalse(cache.hasNewer(loaded))
        cache.noteLoaded(loaded)
        XCTAssertTrue(cache.hasNewer(loaded))
        XCTAssertTrue(cache.hasNewer(.init(id: "b", createTime: time(499), totalDocuments: 1, totalBytes: 10)))
        XCTAssertFalse(cache.hasNewer(.init(id: "b", createTime: time(501), totalDocuments: 1, totalBytes: 10)))
        XCTAssertFalse(cache.hasNewer(.init(id: "other", createTime: time(1), totalDocuments: 1, totalBytes: 10)))
    }

    func testAPersistentStoreKeepsItsBundleCache() async throws {
        let sqlite = try SQLiteStore(directory: nil, migrations: EdgeCacheStorage.migrations)
        let storage = EdgeCacheStorage(store: sqlite, clientID: "A")
        var store = LocalStore(storage: storage, persistent: true, clock: ServerClock())
        store.saveSettings(["project": "p"])
        let loaded = try bundle(doc("b", at: 500), createTime: 500, named: [collectionQuery])
        _ = store.applyBundledDocuments(loaded)
        store.saveNamedQuery(collectionQuery, query: try collectionQuery.query(database: database), documents: [path])
        store.noteBundleLoaded(loaded.metadata)
        try await storage.flush()

        let snapshot = try XCTUnwrap(try storage.load())
        let restored = BundleCache(json: try XCTUnwrap(snapshot.bundles))
        XCTAssertEqual(restored, store.bundles)
        XCTAssertTrue(restored.hasNewer(loaded.metadata))
        let (remote, _, _, targets) = LocalStore.restored(snapshot, database: database)
        XCTAssertEqual(remote[path], .found(doc("b", at: 500), committed: false))
        XCTAssertEqual(targets.targets[try collectionQuery.query(database: database).targetCanonicalID]?.snapshotVersion, time(400))
    }
}
