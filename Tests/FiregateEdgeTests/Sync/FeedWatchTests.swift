@testable import FiregateBackend
@testable import FiregateEdge
import FiregateModel
import XCTest

/// The live watch's server side on its own: commits become remote events keyed by target.
final class FeedWatchTests: XCTestCase {
    let database = DatabaseID(project: "p")
    let t1 = Timestamp(seconds: 1, nanos: 0)

    func doc(_ path: String) -> Document {
        Document(path: ResourcePath(path.split(separator: "/").map(String.init)), fields: [:], createTime: t1, updateTime: t1)
    }

    func testACommitJoinsAndLeavesTheTargetsItIsNewsFor() {
        var feed = FeedWatch()
        let cities = Query(collectionID: "cities"), towns = Query(collectionID: "towns")
        feed.takeServerResult(cities.targetCanonicalID, sequence: 5, matches: nil, unresolved: [])
        let old = doc("cities/old"), new = doc("cities/new")
        let record = CommitRecord(sequence: 6, commitTime: t1, changes: [
            DocumentChange(path: old.path, before: old, after: nil), DocumentChange(path: new.path, before: nil, after: new),
            DocumentChange(path: doc("towns/x").path, before: nil, after: doc("towns/x")),
        ])
        XCTAssertTrue(feed.isBehind(cities.targetCanonicalID, record))
        XCTAssertFalse(feed.isBehind(towns.targetCanonicalID, record), "a target without a server result is fetched, not followed")

        let (event, changed) = feed.remoteEvent(for: record, targets: [.init(queryID: cities.targetCanonicalID, query: cities, targetID: 2)],
                                                keys: { _ in [old.path] }, database: database)
        XCTAssertEqual(changed, [old.path, new.path], "only the target's documents enter the cache")
        XCTAssertEqual(event.targetChanges[2]?.added, [new.path])
        XCTAssertEqual(event.targetChanges[2]?.removed, [old.path])
        XCTAssertEqual(event.targetChanges[2]?.current, true)
        if case .missing(let version, _)? = event.documentUpdates[old.path] { XCTAssertEqual(version, t1) } else { XCTFail("a deletion is a missing document") }
        XCTAssertFalse(feed.isBehind(cities.targetCanonicalID, record), "the result now reflects the commit")
    }

    func testAWindowedTargetLetsTheNextDocumentIn() {
        var feed = FeedWatch()
        let query = Query(collectionID: "cities", limit: 1)
        let a = doc("cities/a"), b = doc("cities/b")
        let matches = QueryMatches(query: query, database: database, candidates: [a, b])
        XCTAssertEqual(matches.window.map(\.path), [a.path])
        feed.takeServerResult(query.targetCanonicalID, sequence: 1, matches: matches, unresolved: [])
        let record = CommitRecord(sequence: 2, commitTime: t1, changes: [DocumentChange(path: a.path, before: a, after: nil)])
        let (event, _) = feed.remoteEvent(for: record, targets: [.init(queryID: query.targetCanonicalID, query: query, targetID: 4)],
                                          keys: { _ in [a.path] }, database: database)
        XCTAssertEqual(event.targetChanges[4]?.added, [b.path])
        XCTAssertEqual(event.targetChanges[4]?.removed, [a.path])
    }

    func testUnresolvedDocumentsLeaveWithTheirLookupOrACommitAndResultsWithTheFeed() {
        var feed = FeedWatch()
        let query = Query(collectionID: "cities"), id = query.targetCanonicalID
        let a = doc("cities/a"), b = doc("cities/b")
        feed.takeServerResult(id, sequence: 1, matches: nil, unresolved: [a.path])
        feed.markUnresolved([b.path], for: id)
        XCTAssertEqual(feed.unresolved[id], [a.path, b.path])
        feed.resolve([a.path], for: id)
        XCTAssertEqual(feed.unresolved[id], [b.path])
        _ = feed.remoteEvent(for: CommitRecord(sequence: 2, commitTime: t1, changes: [DocumentChange(path: b.path, before: nil, after: b)]),
                             targets: [.init(queryID: id, query: query, targetID: 2)], keys: { _ in [] }, database: database)
        XCTAssertNil(feed.unresolved[id])

        feed.markUnresolved([a.path], for: id)
        feed.dropResults()
        XCTAssertFalse(feed.hasResult(id), "without the feed, the next result starts anew")
        XCTAssertEqual(feed.unresolved[id], [a.path], "what is in limbo stays in limbo")
        feed.forget(id)
        XCTAssertNil(feed.unresolved[id])
    }
}
