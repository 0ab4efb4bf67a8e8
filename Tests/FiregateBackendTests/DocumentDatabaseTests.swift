@testable import FiregateBackend
import FiregateModel
import FiregateStore
import XCTest

final class DocumentDatabaseCommitTests: XCTestCase {
    func testCommitAppliesAllWritesAtOneTime() async throws {
        let db = try memoryDatabase()
        let result = try await db.commit([set("c/a", ["n": .integer(1)]), set("c/b", [:]), set("d/x/e/y", ["s": .string("v")])])
        XCTAssertEqual(result.writeResults.count, 3)
        XCTAssertEqual(Set(result.writeResults.map(\.updateTime)), [result.commitTime])
        XCTAssertNil(result.writeResults[0].transformResults)
        for path in ["c/a", "c/b", "d/x/e/y"] {
            let doc = try db.get(rpath(path)).value
            XCTAssertEqual(doc?.updateTime, result.commitTime)
            XCTAssertEqual(doc?.createTime, result.commitTime)
        }
        XCTAssertEqual(db.documentCount, 3)
    }

    func testFailingWriteLeavesNothing() async throws {
        let db = try memoryDatabase()
        let first = try await db.commit([set("c/keep", ["v": .integer(1)])])
        let listen = db.listen(Query(collectionID: "c"), bufferLimit: 10, resumeAfter: nil)
        defer { listen.subscription.cancel() }
        await assertThrowsFiregate(.notFound, contains: "No document to update") {
            try await db.commit([set("c/new", ["v": .integer(1)]), set("c/keep", ["v": .integer(2)]),
                                 set("c/missing", [:], Precondition(exists: true))])
        }
        XCTAssertNil(try db.get(rpath("c/new")).value)
        XCTAssertEqual(try db.get(rpath("c/keep")).value?.fields, ["v": .integer(1)])
        XCTAssertEqual(try db.get(rpath("c/keep")).value?.updateTime, first.commitTime)
        XCTAssertEqual(db.documentCount, 1)
        XCTAssertEqual(listen.subscription.buffered, 0)
        // The database still works and the next commit is the next in sequence.
        _ = try await db.commit([set("c/new", [:])])
        guard case .commit(let record)? = await nextEvent(listen.subscription) else { return XCTFail("expected a commit") }
        XCTAssertEqual(record.sequence, listen.sequence + 1)
        XCTAssertEqual(record.changes.map(\.path), [rpath("c/new")])
    }

    func testWritesInOneCommitSeeEachOther() async throws {
        let db = try memoryDatabase()
        let result = try await db.commit([
            set("c/a", ["n": .integer(1)]),
            Write(path: rpath("c/a"), operation: .transform, transforms: [FieldTransform(field: fpath("n"), operation: .increment(.integer(2)))],
                  precondition: Precondition(exists: true)),
            set("c/b", [:]), delete("c/b"),
        ])
        XCTAssertEqual(try db.get(rpath("c/a")).value?.fields, ["n": .integer(3)])
        XCTAssertNil(try db.get(rpath("c/b")).value)
        XCTAssertEqual(result.writeResults[1].transformResults, [.integer(3)])
        XCTAssertNil(result.writeResults[3].updateTime, "a delete reports no updateTime")
    }

    func testCommitTimesIncreaseAndNoOpKeepsUpdateTime() async throws {
        let db = try memoryDatabase()
        let first = try await db.commit([set("c/a", ["n": .integer(1)])])
        let second = try await db.commit([set("c/a", ["n": .integer(1)])])
        XCTAssertGreaterThan(second.commitTime, first.commitTime)
        XCTAssertEqual(second.writeResults[0].updateTime, first.commitTime, "an unchanged document keeps its updateTime")
        XCTAssertEqual(try db.get(rpath("c/a")).value?.updateTime, first.commitTime)
        let third = try await db.commit([set("c/a", ["n": .integer(2)])])
        XCTAssertEqual(try db.get(rpath("c/a")).value?.updateTime, third.commitTime)
        XCTAssertEqual(try db.get(rpath("c/a")).value?.createTime, first.commitTime)
    }

    func testTooManyWrites() async throws {
        let db = try memoryDatabase()
        let writes = (0...500).map { set("c/d\($0)", [:]) }
        await assertThrowsFiregate(.invalidArgument, contains: "500") { try await db.commit(writes) }
        await assertThrowsFiregate(.invalidArgument, contains: "500") { try await db.batchWrite(writes) }
        _ = try await db.commit(Array(writes.prefix(500)))
        XCTAssertEqual(db.documentCount, 500)
    }

    func testBatchWriteReportsEachWrite() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/exists", ["v": .integer(1)])])
        let results = try await db.batchWrite([
            set("c/a", ["v": .integer(1)]),
            set("c/missing", [:], Precondition(exists: true)),
            set("c/exists", [:], Precondition(exists: false)),
            delete("c/exists2"),
        ])
        XCTAssertEqual(results.count, 4)
        guard case .success(let ok) = results[0] else { return XCTFail("write 0 failed") }
        XCTAssertNotNil(ok.updateTime)
        guard case .failure(let notFound) = results[1], case .failure(let exists) = results[2] else { return XCTFail("writes 1 and 2 should fail") }
        XCTAssertEqual(notFound.status, .notFound)
        XCTAssertEqual(exists.status, .alreadyExists)
        guard case .success = results[3] else { return XCTFail("write 3 failed") }
        XCTAssertNotNil(try db.get(rpath("c/a")).value)
        XCTAssertNil(try db.get(rpath("c/missing")).value)
        await assertThrowsFiregate(.invalidArgument, contains: "the same document cannot be written more than once in a single request") {
            try await db.batchWrite([set("c/x", [:]), delete("c/x")])
        }
        XCTAssertNil(try db.get(rpath("c/x")).value)
    }
}

final class DocumentDatabaseTransactionTests: XCTestCase {
    func testReadWriteTransactionCommits() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", ["n": .integer(1)])])
        let tx = try db.beginTransaction(.readWrite(retrying: nil))
        XCTAssertEqual(try db.get(rpath("c/a"), consistency: .transaction(tx)).value?.fields, ["n": .integer(1)])
        _ = try await db.commit([set("c/a", ["n": .integer(2)])], transaction: tx)
        XCTAssertEqual(try db.get(rpath("c/a")).value?.fields, ["n": .integer(2)])
        // A transaction is used up by its commit.
        await assertThrowsFiregate(.invalidArgument, contains: "no longer valid") { try await db.commit([], transaction: tx) }
    }

    func testAReadLocksTheDocumentAgainstOtherWrites() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", ["n": .integer(1)])])
        let tx = try db.beginTransaction(.readWrite(retrying: nil))
        _ = try db.get(rpath("c/a"), consistency: .transaction(tx))
        let started = ContinuousClock.now
        await assertThrowsFiregate(.aborted, contains: "Too much contention") {
            _ = try await db.commit([set("c/a", ["n": .integer(5)])])
        }
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, DocumentDatabase.lockWait)
        // The fast paths hand such a write to `commit`, which waits.
        XCTAssertTrue(db.holdsLocks(on: [set("c/a", [:])]))
        XCTAssertThrowsError(try db.beginCommit([set("c/a", [:])]))
        _ = try await db.commit([set("c/a", ["n": .integer(2)])], transaction: tx)
        XCTAssertEqual(try db.get(rpath("c/a")).value?.fields, ["n": .integer(2)])
        XCTAssertFalse(db.holdsLocks(on: [set("c/a", [:])]))
    }

    func testAWriteWaitsOnlyUntilTheHolderEnds() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", ["n": .integer(1)])])
        let tx = try db.beginTransaction(.readWrite(retrying: nil))
        _ = try db.get(rpath("c/a"), consistency: .transaction(tx))
        let started = ContinuousClock.now
        async let outside = db.commit([set("c/a", ["n": .integer(9)])])
        try await Task.sleep(for: .milliseconds(300))
        _ = try await db.commit([set("c/a", ["n": .integer(2)])], transaction: tx)
        _ = try await outside
        XCTAssertLessThan(ContinuousClock.now - started, DocumentDatabase.lockWait)
        XCTAssertEqual(try db.get(rpath("c/a")).value?.fields, ["n": .integer(9)], "the waiting write lands after the holder's")
    }

    func testADocumentReadAsMissingIsLockedToo() async throws {
        let db = try memoryDatabase()
        let tx = try db.beginTransaction(.readWrite(retrying: nil))
        XCTAssertNil(try db.batchGet([rpath("c/a")], consistency: .transaction(tx)).value[0].1)
        await assertThrowsFiregate(.aborted) { _ = try await db.commit([set("c/a", [:])]) }
        let results = try await db.batchWrite([set("c/a", [:]), set("c/b", [:])])
        XCTAssertEqual(results.map { (try? $0.get()) == nil }, [true, false], "the held write fails alone")
        _ = try await db.commit([set("c/a", ["by": .string("tx")])], transaction: tx)
        XCTAssertEqual(try db.get(rpath("c/a")).value?.fields, ["by": .string("tx")])
    }

    func testQueryReadsLockWhatTheyReturn() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", ["n": .integer(1)])])
        let started = try db.runQuery(Query(collectionID: "c"), consistency: .newTransaction(.readWrite(retrying: nil)))
        let tx = try XCTUnwrap(started.transaction)
        XCTAssertEqual(started.value.documents.count, 1)
        await assertThrowsFiregate(.aborted) { _ = try await db.commit([delete("c/a")]) }
        _ = try await db.commit([], transaction: tx)
        _ = try await db.commit([delete("c/a")])
    }

    func testTheOlderTransactionWinsAndARetryKeepsItsAge() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", ["n": .integer(0)])])
        let older = try db.beginTransaction(.readWrite(retrying: nil))
        let younger = try db.beginTransaction(.readWrite(retrying: nil))
        for tx in [older, younger] { _ = try db.get(rpath("c/a"), consistency: .transaction(tx)) }
        let started = ContinuousClock.now
        _ = try await db.commit([set("c/a", ["n": .integer(1)])], transaction: older)
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(1), "the older one does not wait for the younger")
        await assertThrowsFiregate(.aborted, contains: "contention") { _ = try db.get(rpath("c/a"), consistency: .transaction(younger)) }
        await assertThrowsFiregate(.aborted, contains: "contention") { _ = try await db.commit([set("c/a", [:])], transaction: younger) }
        // Begun after `younger`, `newest` is younger than its retry, which keeps younger's age.
        let newest = try db.beginTransaction(.readWrite(retrying: nil))
        let retry = try db.beginTransaction(.readWrite(retrying: younger))
        for tx in [newest, retry] { _ = try db.get(rpath("c/a"), consistency: .transaction(tx)) }
        _ = try await db.commit([set("c/a", ["n": .integer(2)])], transaction: retry)
        await assertThrowsFiregate(.aborted) { _ = try await db.commit([set("c/a", [:])], transaction: newest) }
        XCTAssertEqual(try db.get(rpath("c/a")).value?.fields, ["n": .integer(2)])
    }

    func testAnIdleTransactionExpiresAndReleasesItsLocks() async throws {
        let clock = ServerClock()
        let db = try DocumentBackend(storage: MemoryDocumentStorage(), clock: clock).database(testDB)
        _ = try await db.commit([set("c/a", ["n": .integer(1)])])
        let idle = try db.beginTransaction(.readWrite(retrying: nil))
        let busy = try db.beginTransaction(.readWrite(retrying: nil))
        _ = try db.get(rpath("c/a"), consistency: .transaction(idle))
        clock.advance(byMicros: 40_000_000)
        _ = try db.get(rpath("c/b"), consistency: .transaction(busy))
        XCTAssertTrue(db.holdsLocks(on: [set("c/a", [:])]))
        clock.advance(byMicros: 30_000_000)
        // 70 s since `idle` read, 30 s since `busy` did: only `idle` has expired.
        XCTAssertFalse(db.holdsLocks(on: [set("c/a", [:])]))
        XCTAssertTrue(db.holdsLocks(on: [set("c/b", [:])]))
        _ = try await db.commit([set("c/a", ["n": .integer(2)])])
        await assertThrowsFiregate(.invalidArgument, contains: "expired or is no longer valid") {
            _ = try await db.commit([set("c/a", [:])], transaction: idle)
        }
        _ = try await db.commit([set("c/b", [:])], transaction: busy)
    }

    func testUnrelatedChangeDoesNotAbort() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", ["n": .integer(1)])])
        let tx = try db.beginTransaction(.readWrite(retrying: nil))
        _ = try db.get(rpath("c/a"), consistency: .transaction(tx))
        let started = ContinuousClock.now
        _ = try await db.commit([set("c/other", [:])])
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(1), "a write to another document does not wait")
        _ = try await db.commit([set("c/a", ["n": .integer(2)])], transaction: tx)
        XCTAssertEqual(try db.get(rpath("c/a")).value?.fields, ["n": .integer(2)])
    }

    func testReadOnlyTransactionReadsItsSnapshot() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", ["n": .integer(1)])])
        let tx = try db.beginTransaction(.readOnly(readTime: nil))
        _ = try await db.commit([set("c/a", ["n": .integer(2)]), set("c/b", [:])])
        let read = try db.get(rpath("c/a"), consistency: .transaction(tx))
        XCTAssertEqual(read.value?.fields, ["n": .integer(1)])
        XCTAssertEqual(try db.runQuery(Query(collectionID: "c"), consistency: .transaction(tx)).value.documents.map(\.path), [rpath("c/a")])
        XCTAssertEqual(try db.runQuery(Query(collectionID: "c"), consistency: .latest).value.documents.count, 2)
        // The same snapshot time on every read.
        XCTAssertEqual(try db.get(rpath("c/b"), consistency: .transaction(tx)).readTime, read.readTime)
        await assertThrowsFiregate(.invalidArgument, contains: "read-only") {
            try await db.commit([set("c/a", [:])], transaction: tx)
        }
    }

    func testReadOnlyTransactionAtAPastTime() async throws {
        let db = try memoryDatabase()
        let first = try await db.commit([set("c/a", ["n": .integer(1)])])
        _ = try await db.commit([set("c/a", ["n": .integer(2)])])
        let tx = try db.beginTransaction(.readOnly(readTime: first.commitTime))
        XCTAssertEqual(try db.get(rpath("c/a"), consistency: .transaction(tx)).value?.fields, ["n": .integer(1)])
        XCTAssertEqual(try db.get(rpath("c/a"), consistency: .transaction(tx)).readTime, first.commitTime)
    }

    func testRollbackAndInvalidIDs() async throws {
        let db = try memoryDatabase()
        let tx = try db.beginTransaction(.readWrite(retrying: nil))
        try db.rollback(tx)
        await assertThrowsFiregate(.invalidArgument, contains: "expired or is no longer valid") { try db.rollback(tx) }
        await assertThrowsFiregate(.invalidArgument) { try await db.commit([set("c/a", [:])], transaction: tx) }
        XCTAssertNil(try db.get(rpath("c/a")).value)
        await assertThrowsFiregate(.invalidArgument) { try db.get(rpath("c/a"), consistency: .transaction("bogus")) }
        await assertThrowsFiregate(.invalidArgument) { try db.runQuery(Query(collectionID: "c"), consistency: .transaction("bogus")) }
    }

    func testRetryTransactionReplacesTheOldOne() async throws {
        let db = try memoryDatabase()
        let old = try db.beginTransaction(.readWrite(retrying: nil))
        let new = try db.beginTransaction(.readWrite(retrying: old))
        XCTAssertNotEqual(old, new)
        await assertThrowsFiregate(.invalidArgument) { try db.rollback(old) }
        XCTAssertNoThrow(try db.rollback(new))
        XCTAssertNotNil(Base64.decode(new))
    }
}

final class DocumentDatabaseReadTests: XCTestCase {
    func testReadTimeReadsFromHistory() async throws {
        let db = try memoryDatabase()
        let before = db.clock.now()
        let t1 = try await db.commit([set("c/a", ["n": .integer(1)]), set("c/b", ["n": .integer(1)])]).commitTime
        let t2 = try await db.commit([set("c/a", ["n": .integer(2)]), delete("c/b"), set("c/c", [:])]).commitTime
        XCTAssertEqual(try db.get(rpath("c/a"), consistency: .readTime(t1)).value?.fields, ["n": .integer(1)])
        XCTAssertEqual(try db.get(rpath("c/a"), consistency: .readTime(t1)).readTime, t1)
        XCTAssertEqual(try db.get(rpath("c/a"), consistency: .readTime(t2)).value?.fields, ["n": .integer(2)])
        XCTAssertNil(try db.get(rpath("c/a"), consistency: .readTime(before)).value)
        XCTAssertNotNil(try db.get(rpath("c/b"), consistency: .readTime(t1)).value)
        XCTAssertEqual(try db.runQuery(Query(collectionID: "c"), consistency: .readTime(t1)).value.documents.map(\.path), [rpath("c/a"), rpath("c/b")])
        XCTAssertEqual(try db.runQuery(Query(collectionID: "c"), consistency: .readTime(t2)).value.documents.map(\.path), [rpath("c/a"), rpath("c/c")])
        let group = Query(collectionID: "c", allDescendants: true)
        XCTAssertEqual(try db.runQuery(group, consistency: .readTime(t1)).value.documents.count, 2)
        let listed = try db.list(collection: rpath("c"), orderBy: [], offset: 0, limit: nil, showMissing: false, consistency: .readTime(t1))
        XCTAssertEqual(listed.value.map(\.path), [rpath("c/a"), rpath("c/b")])
    }

    func testReadTimeBeforeResetIsRefused() async throws {
        let db = try memoryDatabase()
        let t1 = try await db.commit([set("c/a", [:])]).commitTime
        try await db.reset()
        await assertThrowsFiregate(.failedPrecondition) { try db.get(rpath("c/a"), consistency: .readTime(t1)) }
        await assertThrowsFiregate(.failedPrecondition) { try db.beginTransaction(.readOnly(readTime: t1)) }
    }

    func testBatchGetKeepsOrderAndReportsMissing() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", [:]), set("c/b", [:])])
        let result = try db.batchGet([rpath("c/b"), rpath("c/zz"), rpath("c/a")], consistency: .latest)
        XCTAssertEqual(result.value.map(\.0), [rpath("c/b"), rpath("c/zz"), rpath("c/a")])
        XCTAssertEqual(result.value.map { $0.1 != nil }, [true, false, true])
        XCTAssertNil(result.transaction)
        let started = try db.batchGet([rpath("c/a")], consistency: .newTransaction(.readOnly(readTime: nil)))
        XCTAssertNotNil(started.transaction)
    }

    func testListOrderingPagingAndShowMissing() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([
            set("c/b", ["n": .integer(1)]), set("c/a", ["n": .integer(2)]), set("c/ghost/sub/1", [:]), set("c/ghost2/x/y/z/w", [:]),
            set("c/d", ["n": .integer(0)]), set("other/q", [:]),
        ])
        func ids(_ value: ReadResult<[ListedDocument]>) -> [String] {
            value.value.map { entry in
                switch entry {
                case .found(let doc): doc.path.lastSegment
                case .missing(let path): "missing:" + path.lastSegment
                }
            }
        }
        XCTAssertEqual(ids(try db.list(collection: rpath("c"), orderBy: [], offset: 0, limit: nil, showMissing: false, consistency: .latest)), ["a", "b", "d"])
        XCTAssertEqual(ids(try db.list(collection: rpath("c"), orderBy: [], offset: 0, limit: nil, showMissing: true, consistency: .latest)),
                       ["a", "b", "d", "missing:ghost", "missing:ghost2"])
        XCTAssertEqual(ids(try db.list(collection: rpath("c"), orderBy: [.init(field: fpath("n"))], offset: 0, limit: nil, showMissing: false, consistency: .latest)),
                       ["d", "b", "a"])
        XCTAssertEqual(ids(try db.list(collection: rpath("c"), orderBy: [], offset: 1, limit: 1, showMissing: false, consistency: .latest)), ["b"])
        XCTAssertEqual(ids(try db.list(collection: rpath("c/ghost/sub"), orderBy: [], offset: 0, limit: nil, showMissing: false, consistency: .latest)), ["1"])
        XCTAssertEqual(ids(try db.list(collection: rpath("none"), orderBy: [], offset: 0, limit: nil, showMissing: true, consistency: .latest)), [])
    }

    func testListCollectionIDs() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("b/1", [:]), set("a/1/x/2", [:]), set("a/1/y/3/z/4", [:]), set("B/1", [:]), set("a/2", [:])])
        XCTAssertEqual(try db.listCollectionIDs(parent: ResourcePath([])), ["B", "a", "b"])
        XCTAssertEqual(try db.listCollectionIDs(parent: rpath("a/1")), ["x", "y"])
        XCTAssertEqual(try db.listCollectionIDs(parent: rpath("a/1/y/3")), ["z"])
        XCTAssertEqual(try db.listCollectionIDs(parent: rpath("a/2")), [])
    }

    /// At a read time: a collection deleted since is listed, one created since is not.
    func testListCollectionIDsAtAReadTime() async throws {
        let db = try memoryDatabase()
        let first = try await db.commit([set("old/1", [:]), set("kept/1", [:])])
        _ = try await db.commit([Write(path: rpath("old/1"), operation: .delete), set("new/1", [:])])
        XCTAssertEqual(try db.listCollectionIDs(parent: ResourcePath([])), ["kept", "new"])
        XCTAssertEqual(try db.listCollectionIDs(parent: ResourcePath([]), consistency: .readTime(first.commitTime)), ["kept", "old"])
    }

    func testAggregation() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", ["n": .integer(1)]), set("c/b", ["n": .double(2.5)]), set("c/c", ["n": .string("x")])])
        let result = try db.runAggregation(Query(collectionID: "c"), aggregations: [
            Aggregation(alias: "count", kind: .count(upTo: nil)), Aggregation(alias: "sum", kind: .sum(fpath("n"))),
            Aggregation(alias: "avg", kind: .avg(fpath("n"))),
        ])
        XCTAssertEqual(result.value.map(\.0), ["count", "sum", "avg"])
        XCTAssertEqual(result.value.map(\.1), [.integer(3), .double(3.5), .double(1.75)])
        let limited = try db.runAggregation(Query(collectionID: "c", limit: 1), aggregations: [Aggregation(alias: "n", kind: .count(upTo: nil))])
        XCTAssertEqual(limited.value[0].1, .integer(1))
    }

    func testEncodedDocumentIsTheDocumentJSONAndFollowsUpdates() async throws {
        let db = try memoryDatabase()
        XCTAssertNil(db.encodedDocument(rpath("c/a")))
        _ = try await db.commit([set("c/a", ["n": .integer(1)])])
        let first = try XCTUnwrap(db.encodedDocument(rpath("c/a")))
        let doc = try XCTUnwrap(try db.get(rpath("c/a")).value)
        XCTAssertEqual(first, JSONWriter.bytes(doc.json(database: testDB)))
        _ = try await db.commit([set("c/a", ["n": .integer(2)])])
        let second = try XCTUnwrap(db.encodedDocument(rpath("c/a")))
        XCTAssertTrue(String(decoding: second, as: UTF8.self).contains(#""integerValue":"2""#))
        _ = try await db.commit([delete("c/a")])
        XCTAssertNil(db.encodedDocument(rpath("c/a")))
    }

    func testResetRemovesEverything() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", [:]), set("d/b/e/f", [:])])
        let tx = try db.beginTransaction(.readWrite(retrying: nil))
        try await db.reset()
        XCTAssertEqual(db.documentCount, 0)
        XCTAssertEqual(try db.listCollectionIDs(parent: ResourcePath([])), [])
        XCTAssertEqual(try db.runQuery(Query(collectionID: "c")).value.documents, [])
        await assertThrowsFiregate(.invalidArgument) { try db.rollback(tx) }
        // Usable again afterwards.
        _ = try await db.commit([set("c/a", [:])])
        XCTAssertEqual(db.documentCount, 1)
    }
}
