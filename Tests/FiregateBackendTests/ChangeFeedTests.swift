@testable import FiregateBackend
import FiregateModel
import FiregateStore
import Synchronization
import XCTest

final class ChangeFeedTests: XCTestCase {
    func testCommitsArriveInOrderWithTheirChanges() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", ["n": .integer(0)])])
        let start = db.listen(Query(collectionID: "c"), bufferLimit: 100, resumeAfter: nil)
        defer { start.subscription.cancel() }
        XCTAssertEqual(start.sequence, 1)
        XCTAssertEqual(start.matches.sorted.map(\.path), [rpath("c/a")])
        let t2 = try await db.commit([set("c/a", ["n": .integer(1)])]).commitTime
        _ = try await db.commit([set("c/b", [:]), set("x/y", [:])])
        _ = try await db.commit([delete("c/a")])
        _ = try await db.commit([delete("c/nothing")])  // changes nothing: not published
        var records: [CommitRecord] = []
        for _ in 0..<3 {
            guard case .commit(let record)? = await nextEvent(start.subscription) else { return XCTFail("expected a commit") }
            records.append(record)
        }
        XCTAssertEqual(records.map(\.sequence), [2, 3, 4])
        XCTAssertEqual(records[0].commitTime, t2)
        XCTAssertEqual(records[0].changes.first?.before?.fields, ["n": .integer(0)])
        XCTAssertEqual(records[0].changes.first?.after?.fields, ["n": .integer(1)])
        XCTAssertEqual(Set(records[1].changes.map(\.path)), [rpath("c/b"), rpath("x/y")])
        XCTAssertNil(records[2].changes.first?.after)
        XCTAssertEqual(start.subscription.buffered, 0)
    }

    func testManyConcurrentCommitsArriveInSequenceOrder() async throws {
        let db = try memoryDatabase()
        let start = db.listen(Query(collectionID: "c"), bufferLimit: 1000, resumeAfter: nil)
        defer { start.subscription.cancel() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<100 {
                group.addTask { _ = try await db.commit([set("c/d\(i % 7)", ["i": .integer(Int64(i))])]) }
            }
            try await group.waitForAll()
        }
        var sequences: [Int64] = []
        var times: [Timestamp] = []
        for _ in 0..<100 {
            guard case .commit(let record)? = await nextEvent(start.subscription) else { return XCTFail("expected a commit") }
            sequences.append(record.sequence)
            times.append(record.commitTime)
        }
        XCTAssertEqual(sequences, Array(1...100))
        XCTAssertEqual(times, times.sorted())
        XCTAssertEqual(Set(times).count, 100)
    }

    func testSlowSubscriberOverflowsInsteadOfGrowing() async throws {
        let db = try memoryDatabase()
        let start = db.listen(Query(collectionID: "c"), bufferLimit: 3, resumeAfter: nil)
        defer { start.subscription.cancel() }
        for i in 0..<50 {
            _ = try await db.commit([set("c/d", ["i": .integer(Int64(i))])])
            XCTAssertLessThanOrEqual(start.subscription.buffered, 3)
        }
        guard case .overflow? = await nextEvent(start.subscription) else { return XCTFail("expected overflow") }
        // Nothing stale follows the overflow: the reader resynchronises, then sees only new commits.
        XCTAssertEqual(start.subscription.buffered, 0)
        _ = try await db.commit([set("c/d", ["i": .integer(99)])])
        guard case .commit(let record)? = await nextEvent(start.subscription) else { return XCTFail("expected a commit") }
        XCTAssertEqual(record.sequence, 51)
    }

    func testBufferBelowTheLimitDoesNotOverflow() async throws {
        let db = try memoryDatabase()
        let start = db.listen(Query(collectionID: "c"), bufferLimit: 3, resumeAfter: nil)
        defer { start.subscription.cancel() }
        for i in 0..<3 { _ = try await db.commit([set("c/d", ["i": .integer(Int64(i))])]) }
        XCTAssertEqual(start.subscription.buffered, 3)
        for expected in 1...3 {
            guard case .commit(let record)? = await nextEvent(start.subscription) else { return XCTFail("expected a commit") }
            XCTAssertEqual(record.sequence, Int64(expected))
        }
    }

    func testResetClosesSubscriptions() async throws {
        let db = try memoryDatabase()
        let first = db.listen(Query(collectionID: "c"), bufferLimit: 10, resumeAfter: nil)
        let second = db.listen(document: rpath("c/a"), bufferLimit: 10, resumeAfter: nil)
        XCTAssertEqual(db.feed.subscriberCount, 2)
        try await db.reset()
        XCTAssertEqual(db.feed.subscriberCount, 0)
        for subscription in [first.subscription, second.subscription] {
            guard case .closed(let error)? = await nextEvent(subscription) else { return XCTFail("expected closed") }
            XCTAssertEqual(error.status, .aborted)
            let after = await nextEvent(subscription)
            XCTAssertNil(after, "nothing after closed")
        }
    }

    func testWaitingReaderIsWokenByACommitAndByCancel() async throws {
        let db = try memoryDatabase()
        let start = db.listen(Query(collectionID: "c"), bufferLimit: 10, resumeAfter: nil)
        let reader = Task { await start.subscription.next() }
        // Give the reader a chance to park; the result is the same whether or not it did.
        await Task.yield()
        _ = try await db.commit([set("c/a", [:])])
        guard case .commit(let record)? = await reader.value else { return XCTFail("expected a commit") }
        XCTAssertEqual(record.sequence, 1)
        let parked = Task { await start.subscription.next() }
        start.subscription.cancel()
        let value = await parked.value
        XCTAssertNil(value)
        XCTAssertEqual(db.feed.subscriberCount, 0)
    }

    func testHeartbeatsComeAfterCommits() async throws {
        let db = try memoryDatabase()
        let start = db.listen(Query(collectionID: "c"), bufferLimit: 10, resumeAfter: nil)
        defer { start.subscription.cancel() }
        _ = try await db.commit([set("c/a", [:])])
        start.subscription.deliver(.heartbeat)
        start.subscription.deliver(.heartbeat)
        guard case .commit? = await nextEvent(start.subscription) else { return XCTFail("expected the commit first") }
        guard case .heartbeat? = await nextEvent(start.subscription) else { return XCTFail("expected one heartbeat") }
        _ = try await db.commit([set("c/b", [:])])
        guard case .commit(let record)? = await nextEvent(start.subscription) else { return XCTFail("expected the second commit, not another heartbeat") }
        XCTAssertEqual(record.sequence, 2)
    }

    func testListenStartResumesFromASequence() async throws {
        let db = try memoryDatabase()
        let query = Query(collectionID: "c", orderBy: [.init(field: fpath("n"))])
        _ = try await db.commit([set("c/a", ["n": .integer(1)])])
        _ = try await db.commit([set("c/b", ["n": .integer(2)])])
        _ = try await db.commit([set("c/a", ["n": .integer(3)]), delete("c/b")])
        let resumed = db.listen(query, bufferLimit: 10, resumeAfter: 2)
        resumed.subscription.cancel()
        XCTAssertEqual(resumed.resumedWindow?.map(\.path.lastSegment), ["a", "b"])
        XCTAssertEqual(resumed.resumedWindow?.first?.fields, ["n": .integer(1)])
        XCTAssertEqual(resumed.matches.window.map(\.path.lastSegment), ["a"])
        XCTAssertEqual(resumed.sequence, 3)
        let fromStart = db.listen(query, bufferLimit: 10, resumeAfter: 0)
        fromStart.subscription.cancel()
        XCTAssertEqual(fromStart.resumedWindow, [])
        let current = db.listen(query, bufferLimit: 10, resumeAfter: 3)
        current.subscription.cancel()
        XCTAssertEqual(current.resumedWindow, current.matches.window)
        let future = db.listen(query, bufferLimit: 10, resumeAfter: 9)
        future.subscription.cancel()
        XCTAssertNil(future.resumedWindow)
        let doc = db.listen(document: rpath("c/b"), bufferLimit: 10, resumeAfter: 2)
        doc.subscription.cancel()
        XCTAssertEqual(doc.resumedDocument??.fields, ["n": .integer(2)])
        XCTAssertNil(doc.document)
    }

    func testResumeTokens() throws {
        let db = try memoryDatabase()
        let token = db.resumeToken(sequence: 42)
        XCTAssertEqual(db.sequence(fromResumeToken: token), 42)
        XCTAssertNil(db.sequence(fromResumeToken: "other.42"))
        XCTAssertNil(db.sequence(fromResumeToken: "42"))
        XCTAssertNil(db.sequence(fromResumeToken: token + ".1"))
        let another = try memoryDatabase()
        XCTAssertNil(another.sequence(fromResumeToken: token), "tokens of another process/database are not positions here")
    }

    func testTokensBeforeAResetAreTooOld() async throws {
        let db = try memoryDatabase()
        _ = try await db.commit([set("c/a", [:])])
        try await db.reset()
        let start = db.listen(Query(collectionID: "c"), bufferLimit: 10, resumeAfter: 1)
        start.subscription.cancel()
        XCTAssertNil(start.resumedWindow)
    }
}

/// A subscription with an interest hands out only the commits it wants, and still knows when
/// everything published was handled.
final class FeedInterestTests: XCTestCase {
    func collectionIs(_ id: String) -> FeedInterest {
        let interest = FeedInterest()
        interest.set([Query(collectionID: id)])
        return interest
    }

    func testRejectedCommitsAreNotHandedOutButCountAsHandled() async throws {
        let db = try memoryDatabase()
        let subscription = db.feed.subscribe(bufferLimit: 100, interest: collectionIs("c"))
        defer { subscription.cancel() }
        let consumer = Task { await subscription.next() }
        _ = try await db.commit([set("x/1", [:])])
        _ = try await db.commit([set("x/2", [:])])
        await subscription.waitUntilHandled(through: db.feed.lastPublished)  // returns: nothing was for us
        _ = try await db.commit([set("c/a", [:])])
        guard case .commit(let record)? = await consumer.value else { return XCTFail("expected the commit on c") }
        XCTAssertEqual(record.sequence, 3)
    }

    func testACommitHandedOutIsHandledOnlyOnceTheConsumerAsksForMore() async throws {
        let db = try memoryDatabase()
        let subscription = db.feed.subscribe(bufferLimit: 100, interest: collectionIs("c"))
        defer { subscription.cancel() }
        _ = try await db.commit([set("c/a", [:])])
        _ = try await db.commit([set("x/1", [:])])  // rejected while c/a is still pending
        guard case .commit? = await subscription.next() else { return XCTFail("expected c/a") }
        let target = db.feed.lastPublished
        let handled = Mutex(false)
        let waiter = Task {
            await subscription.waitUntilHandled(through: target)
            handled.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertFalse(handled.withLock { $0 }, "c/a was handed out but not yet processed")
        let next = Task { await subscription.next() }  // processed c/a: asks for more
        await waiter.value
        _ = try await db.commit([set("c/b", [:])])
        guard case .commit(let record)? = await next.value else { return XCTFail("expected c/b") }
        XCTAssertEqual(record.sequence, 3)
    }

    func testTheInterestFollowsItsQueriesAndCollectionGroupsAreCheckedByParent() async throws {
        let db = try memoryDatabase()
        let interest = FeedInterest()
        let subscription = db.feed.subscribe(bufferLimit: 100, interest: interest)
        defer { subscription.cancel() }
        _ = try await db.commit([set("c/a", [:])])  // no queries yet: not for us
        await subscription.waitUntilHandled(through: db.feed.lastPublished)
        XCTAssertEqual(subscription.buffered, 0)

        // Every `items` collection under rooms/r1, not under rooms/r2.
        interest.set([Query(parent: rpath("rooms/r1"), collectionID: "items", allDescendants: true)])
        _ = try await db.commit([set("rooms/r2/items/x", [:])])
        _ = try await db.commit([set("rooms/r1/items/y", [:])])
        guard case .commit(let record)? = await subscription.next() else { return XCTFail("expected rooms/r1/items/y") }
        XCTAssertEqual(record.changes.map(\.path), [rpath("rooms/r1/items/y")])
        XCTAssertEqual(record.sequence, 3)

        interest.set([])
        _ = try await db.commit([set("rooms/r1/items/z", [:])])
        let consumer = Task { await subscription.next() }
        await subscription.waitUntilHandled(through: db.feed.lastPublished)
        _ = try await db.commit([set("other/1", [:])])
        interest.set([Query(collectionID: "other")])
        _ = try await db.commit([set("other/2", [:])])
        guard case .commit(let later)? = await consumer.value else { return XCTFail("expected other/2") }
        XCTAssertEqual(later.changes.map(\.path), [rpath("other/2")], "nothing before the interest named the collection")
    }

    func testManySubscribersOnOtherCollectionsAreNotVisited() async throws {
        let db = try memoryDatabase()
        let others = (0..<200).map { i in db.feed.subscribe(bufferLimit: 4, interest: collectionIs("c\(i)")) }
        defer { others.forEach { $0.cancel() } }
        for i in 0..<20 { _ = try await db.commit([set("mine/\(i)", [:])]) }
        // A subscriber visited for every commit would hold skip items or have overflowed.
        for subscription in others {
            XCTAssertEqual(subscription.buffered, 0)
            XCTAssertEqual(subscription.relevantThrough.load(ordering: .relaxed), 0)
        }
    }
}
