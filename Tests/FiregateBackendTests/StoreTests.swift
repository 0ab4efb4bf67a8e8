@testable import FiregateBackend
import FiregateModel
@testable import FiregateStore
import FiregateTestSupport
import Foundation
import GRDB
import Synchronization
import XCTest

final class GroupCommitterTests: XCTestCase {
    static let table = StoreMigration("test-rows") { db in
        try db.execute(sql: "CREATE TABLE rows (seq INTEGER PRIMARY KEY AUTOINCREMENT, value INTEGER NOT NULL)")
    }

    func rows(_ store: SQLiteStore) throws -> [Int] {
        try store.writer.read { db in try Int.fetchAll(db, sql: "SELECT value FROM rows ORDER BY seq") }
    }

    func testUnitsRunAndCompleteInSubmissionOrder() async throws {
        let store = try SQLiteStore.inMemory(migrations: [Self.table])
        let completions = Mutex<[Int]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for i in 0..<200 {
                store.committer.enqueue({ db in
                    try db.execute(sql: "INSERT INTO rows (value) VALUES (?)", arguments: [i])
                }, completion: { result in
                    if case .failure(let error) = result { XCTFail("unit \(i) failed: \(error)") }
                    let count = completions.withLock { $0.append(i); return $0.count }
                    if count == 200 { done.resume() }
                })
            }
        }
        XCTAssertEqual(completions.withLock { $0 }, Array(0..<200))
        XCTAssertEqual(try rows(store), Array(0..<200))
    }

    func testFailingUnitRollsBackAloneInsideABatch() async throws {
        let store = try SQLiteStore.inMemory(migrations: [Self.table])
        struct Boom: Error {}
        // The first unit holds the writer until the rest are queued, so they share one transaction.
        let gate = DispatchSemaphore(value: 0)
        let results = Mutex<[Int: Bool]>([:])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let record = { @Sendable (i: Int, ok: Bool) in
                let count = results.withLock { $0[i] = ok; return $0.count }
                if count == 4 { done.resume() }
            }
            store.committer.enqueue({ db in
                gate.wait()
                try db.execute(sql: "INSERT INTO rows (value) VALUES (0)")
            }, completion: { record(0, (try? $0.get()) != nil) })
            store.committer.enqueue({ db in
                try db.execute(sql: "INSERT INTO rows (value) VALUES (1)")
            }, completion: { record(1, (try? $0.get()) != nil) })
            store.committer.enqueue({ db in
                try db.execute(sql: "INSERT INTO rows (value) VALUES (2)")
                throw Boom()
            }, completion: { result in
                if case .failure(let error) = result { XCTAssertTrue(error is Boom) }
                record(2, (try? result.get()) != nil)
            })
            store.committer.enqueue({ db in
                try db.execute(sql: "INSERT INTO rows (value) VALUES (3)")
            }, completion: { record(3, (try? $0.get()) != nil) })
            gate.signal()
        }
        XCTAssertEqual(results.withLock { $0 }, [0: true, 1: true, 2: false, 3: true])
        XCTAssertEqual(try rows(store), [0, 1, 3])
    }

    func testCommitAwaitsAndThrows() async throws {
        let store = try SQLiteStore.inMemory(migrations: [Self.table])
        try await store.committer.commit { db in try db.execute(sql: "INSERT INTO rows (value) VALUES (7)") }
        XCTAssertEqual(try rows(store), [7])
        do {
            try await store.committer.commit { db in try db.execute(sql: "INSERT INTO nowhere VALUES (1)") }
            XCTFail("expected an error")
        } catch {
            XCTAssertTrue(error is DatabaseError)
        }
        XCTAssertEqual(try rows(store), [7])
    }
}

final class PersistenceTests: XCTestCase {
    /// Every value type, including the awkward doubles.
    let fields: [String: Value] = [
        "null": .null, "bool": .boolean(true), "int": .integer(.min), "double": .double(-2.5), "nan": .double(.nan),
        "inf": .double(-.infinity), "negZero": .double(-0.0), "time": .timestamp(Timestamp(seconds: 1_700_000_000, nanos: 123_456_000)),
        "string": .string("héllo 😀 \u{0}"), "bytes": .bytes([0, 255, 7]), "ref": .reference("projects/p/databases/(default)/documents/c/x"),
        "geo": .geoPoint(latitude: 45.5, longitude: -73.25), "array": .array([.integer(1), .map(["k": .string("v")])]),
        "map": .map(["nested": .map(["deep": .array([])]), "": .null]), "emptyMap": .map([:]),
    ]

    /// Opens a backend on `directory`, runs `body`, then waits until its SQLite pool is gone, so the
    /// next open of the same file (the "restart") does not overlap the old process's connections.
    func withBackend(_ directory: URL, _ body: (Backend) async throws -> Void) async throws {
        weak var pool: DatabasePool?
        do {
            let backend = try await Backend(directory: directory, defaultProject: "p")
            pool = backend.store.writer as? DatabasePool
            XCTAssertNotNil(pool)
            try await body(backend)
        }
        await waitUntil("the database pool to close") { pool == nil }
    }

    /// Compares through the wire encoding so NaN and -0 count as themselves.
    func encoded(_ fields: [String: Value]?) -> String? { fields.map { JSONWriter.string(Value.fieldsJSON($0)) } }

    func testDocumentsSurviveARestart() async throws {
        let directory = try temporaryDirectory(self)
        var written: [String: Document] = [:]
        try await withBackend(directory) { backend in
            let db = backend.documents.database(testDB)
            _ = try await db.commit([set("c/all", fields), set("c/gone", [:]), set("c/a/sub/b", ["n": .integer(1)])])
            _ = try await db.commit([delete("c/gone"), set("c/a/sub/b", ["n": .integer(2)])])
            let other = backend.documents.database(DatabaseID(project: "q", database: "db2"))
            _ = try await other.commit([set("x/y", ["o": .boolean(false)])])
            for path in ["c/all", "c/a/sub/b"] { written[path] = try db.get(rpath(path)).value }
            written["q:x/y"] = try other.get(rpath("x/y")).value
        }
        try await withBackend(directory) { reopened in
        let db = reopened.documents.database(testDB)
        XCTAssertEqual(db.documentCount, 2)
        XCTAssertNil(try db.get(rpath("c/gone")).value)
        for path in ["c/all", "c/a/sub/b"] {
            let read = try db.get(rpath(path)).value
            XCTAssertEqual(encoded(read?.fields), encoded(written[path]?.fields), path)
            XCTAssertEqual(read?.createTime, written[path]?.createTime)
            XCTAssertEqual(read?.updateTime, written[path]?.updateTime)
        }
        guard case .double(let negZero)? = try db.get(rpath("c/all")).value?.fields["negZero"] else { return XCTFail("negZero lost") }
        XCTAssertEqual(negZero.sign, .minus)
        let other = reopened.documents.database(DatabaseID(project: "q", database: "db2"))
        XCTAssertEqual(try other.get(rpath("x/y")).value, written["q:x/y"])
        // Queries and collection listings are rebuilt from the loaded documents.
        XCTAssertEqual(try db.listCollectionIDs(parent: rpath("c/a")), ["sub"])
        XCTAssertEqual(try db.runQuery(Query(collectionID: "sub", allDescendants: true)).value.documents.map(\.path), [rpath("c/a/sub/b")])
        // New commits after a restart are later than every stored one.
        let next = try await db.commit([set("c/new", [:])])
        XCTAssertGreaterThan(next.commitTime, written["c/a/sub/b"]!.updateTime)
        }
    }

    func testReadTimeBeforeARestartIsNotAnsweredFromTheCurrentState() async throws {
        let directory = try temporaryDirectory(self)
        var t1 = Timestamp(seconds: 0, nanos: 0)
        try await withBackend(directory) { backend in
            let db = backend.documents.database(testDB)
            t1 = try await db.commit([set("c/a", ["v": .integer(1)])]).commitTime
            _ = try await db.commit([set("c/a", ["v": .integer(2)]), set("c/b", [:])])
        }
        try await withBackend(directory) { backend in
        let db = backend.documents.database(testDB)
        // The history did not survive the restart: a past read must be refused, not answered with today's data.
        do {
            let read = try db.runQuery(Query(collectionID: "c"), consistency: .readTime(t1))
            XCTAssertEqual(read.value.documents.map(\.fields), [["v": .integer(1)]], "wrong snapshot for a pre-restart readTime")
        } catch let error as FiregateError {
            XCTAssertEqual(error.status, .failedPrecondition)
        }
        XCTAssertEqual(try db.runQuery(Query(collectionID: "c")).value.documents.count, 2)
        }
    }

    func testResetIsDurable() async throws {
        let directory = try temporaryDirectory(self)
        try await withBackend(directory) { backend in
            let db = backend.documents.database(testDB)
            _ = try await db.commit([set("c/a", [:])])
            _ = try await backend.documents.database(DatabaseID(project: "keep")).commit([set("c/k", [:])])
            try await db.reset()
            _ = try await db.commit([set("c/after", [:])])
        }
        try await withBackend(directory) { reopened in
            XCTAssertEqual(try reopened.documents.database(testDB).runQuery(Query(collectionID: "c")).value.documents.map(\.path), [rpath("c/after")])
            XCTAssertEqual(reopened.documents.database(DatabaseID(project: "keep")).documentCount, 1)
        }
    }

    func testConcurrentDurableCommitsArePublishedInOrderAndAllSurvive() async throws {
        let directory = try temporaryDirectory(self)
        var acknowledged: [String: Timestamp] = [:]
        try await withBackend(directory) { backend in
            let db = backend.documents.database(testDB)
            let start = db.listen(Query(collectionID: "c"), bufferLimit: 1000, resumeAfter: nil)
            defer { start.subscription.cancel() }
            let results = try await withThrowingTaskGroup(of: (String, Timestamp).self) { group in
                for i in 0..<200 {
                    group.addTask {
                        let result = try await db.commit([set("c/d\(i % 50)", ["i": .integer(Int64(i))]), set("log/\(i)", [:])])
                        return ("c/d\(i % 50)", result.commitTime)
                    }
                }
                return try await group.reduce(into: [(String, Timestamp)]()) { $0.append($1) }
            }
            for (path, time) in results where time > acknowledged[path] ?? Timestamp(seconds: 0, nanos: 0) { acknowledged[path] = time }
            var last: Int64 = 0
            var lastTime = Timestamp(seconds: 0, nanos: 0)
            for _ in 0..<200 {
                guard case .commit(let record)? = await nextEvent(start.subscription) else { return XCTFail("expected a commit") }
                XCTAssertEqual(record.sequence, last + 1)
                XCTAssertGreaterThan(record.commitTime, lastTime)
                last = record.sequence
                lastTime = record.commitTime
            }
        }
        try await withBackend(directory) { reopened in
            let db = reopened.documents.database(testDB)
            XCTAssertEqual(db.documentCount, 250)
            for (path, time) in acknowledged {
                XCTAssertEqual(try db.get(rpath(path)).value?.updateTime, time, "the last acknowledged write of \(path) is the one on disk")
            }
        }
    }

    func testOnDiskStoreIsFullySynchronous() async throws {
        let directory = try temporaryDirectory(self)
        try await withBackend(directory) { backend in
            // 2 = FULL: a commit is on disk (WAL fsync'd) before it is acknowledged, power loss included.
            let writer = try await backend.store.writer.write { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
            XCTAssertEqual(writer, 2)
            let journal = try await backend.store.writer.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
            XCTAssertEqual(journal, "wal")
        }
    }

    func testInMemoryBackendKeepsNothing() async throws {
        let backend = try await Backend(directory: nil, defaultProject: "p")
        _ = try await backend.documents.database(testDB).commit([set("c/a", [:])])
        let again = try await Backend(directory: nil, defaultProject: "p")
        XCTAssertEqual(again.documents.database(testDB).documentCount, 0)
        XCTAssertEqual(backend.documents.allDatabases.map(\.id), [testDB])
    }
}
