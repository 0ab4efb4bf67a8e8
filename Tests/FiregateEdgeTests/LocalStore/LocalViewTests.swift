import FiregateModel
import XCTest

@testable import FiregateEdge

final class LocalViewTests: XCTestCase {
    let database = DatabaseID(project: "p")
    let t = Timestamp(seconds: 100, nanos: 0)

    func path(_ id: String) -> ResourcePath { ResourcePath(["c", id]) }

    func testPendingWritesOverlayTheRemoteDocument() {
        var remote = RemoteDocumentCache()
        remote.set(path("a"), .found(Document(path: path("a"), fields: ["n": .integer(1), "k": .string("x")], createTime: t, updateTime: t), committed: false))
        var queue = MutationQueue()
        _ = queue.add(writes: [Write(path: path("a"), operation: .update(fields: ["n": .integer(2)], mask: [FieldPath(["n"])]))], localWriteTime: t)
        _ = queue.add(writes: [Write(path: path("a"), operation: .transform, transforms: [FieldTransform(field: FieldPath(["n"]), operation: .increment(.integer(5)))])],
                      localWriteTime: t)
        let view = LocalViewBuilder(database: database, remote: remote, queue: queue)
        let doc = view.document(path("a"))
        XCTAssertEqual(doc?.document.fields, ["n": .integer(7), "k": .string("x")])
        XCTAssertEqual(doc?.hasLocalMutations, true)
        XCTAssertEqual(doc?.document.updateTime, t, "a pending write keeps the server version")
    }

    func testServerTimestampIsAPendingSentinelResolvedPerBehavior() {
        var queue = MutationQueue()
        let local = Timestamp(seconds: 500, nanos: 0)
        _ = queue.add(writes: [Write(path: path("a"), operation: .update(fields: ["t": .string("old")], mask: nil))], localWriteTime: local)
        _ = queue.add(writes: [Write(path: path("a"), operation: .transform, transforms: [FieldTransform(field: FieldPath(["t"]), operation: .requestTime)])],
                      localWriteTime: local)
        let doc = LocalViewBuilder(database: database, remote: RemoteDocumentCache(), queue: queue).document(path("a"))!
        XCTAssertEqual(ServerTimestampBehavior.none.resolve(doc.document.fields)["t"], .null)
        XCTAssertEqual(ServerTimestampBehavior.estimate.resolve(doc.document.fields)["t"], .timestamp(local))
        XCTAssertEqual(ServerTimestampBehavior.previous.resolve(doc.document.fields)["t"], .string("old"))
    }

    func testFailedLocalPreconditionSkipsTheMutation() {
        var queue = MutationQueue()
        _ = queue.add(writes: [Write(path: path("a"), operation: .update(fields: ["n": .integer(1)], mask: [FieldPath(["n"])]),
                                     precondition: Precondition(exists: true))], localWriteTime: t)
        let view = LocalViewBuilder(database: database, remote: RemoteDocumentCache(), queue: queue)
        XCTAssertNil(view.document(path("a")), "update() of a missing document does not create it locally")
        XCTAssertTrue(view.isKnown(path("a")))
    }

    func testQueriesRunOverCachedAndLocallyWrittenDocuments() {
        var remote = RemoteDocumentCache()
        remote.set(path("a"), .found(Document(path: path("a"), fields: ["n": .integer(5)], createTime: t, updateTime: t), committed: false))
        remote.set(path("gone"), .missing(version: t))
        var queue = MutationQueue()
        _ = queue.add(writes: [Write(path: path("b"), operation: .update(fields: ["n": .integer(1)], mask: nil))], localWriteTime: t)
        _ = queue.add(writes: [Write(path: ResourcePath(["other", "x"]), operation: .update(fields: ["n": .integer(0)], mask: nil))], localWriteTime: t)
        let view = LocalViewBuilder(database: database, remote: remote, queue: queue)
        let result = view.run(Query(collectionID: "c", orderBy: [.init(field: FieldPath(["n"]))]))
        XCTAssertEqual(result.map(\.document.path.lastSegment), ["b", "a"])
        XCTAssertEqual(result.map(\.hasLocalMutations), [true, false])
    }

    func testMutationQueueKeepsBatchOrderAcrossRestore() {
        var queue = MutationQueue()
        let first = queue.add(writes: [], localWriteTime: t)
        let second = queue.add(writes: [], localWriteTime: t)
        var restored = MutationQueue()
        restored.restore([second, first])
        XCTAssertEqual(restored.batches.map(\.id), [1, 2])
        XCTAssertEqual(restored.add(writes: [], localWriteTime: t).id, 3)
    }

    func testSettingsPlatformDefaultsAndValidation() throws {
        var settings = ClientSettings(project: "p")
        settings = try ClientSettings.parse(["platform": "web"], over: settings)
        XCTAssertEqual(settings.persistence, .memory)
        XCTAssertEqual(settings.garbageCollector, .eager)
        settings = try ClientSettings.parse(["persistence": "persistent"], over: settings)
        XCTAssertEqual(settings.cacheSizeBytes, 40 * 1024 * 1024)
        XCTAssertThrowsError(try ClientSettings.parse(["cacheSizeBytes": 1000], over: settings)) { error in
            XCTAssertEqual((error as? FiregateError)?.status, .invalidArgument)
        }
        XCTAssertEqual(try ClientSettings.parse(["cacheSizeBytes": -1], over: settings).cacheSizeBytes, -1)
    }
}
