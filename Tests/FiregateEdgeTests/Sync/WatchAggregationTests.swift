import FiregateModel
import XCTest

@testable import FiregateEdge

/// The scripted watch's parts: MD5 and the bloom filter of existence filters, the aggregator
/// that turns watch messages into consistent snapshots, and limbo lookups.
final class WatchAggregationTests: XCTestCase {
    private let database = DatabaseID(project: "test-project")

    func testMD5MatchesTheRFCVectors() {
        func hex(_ text: String) -> String { MD5.digest(Array(text.utf8)).map { String(format: "%02x", $0) }.joined() }
        XCTAssertEqual(hex(""), "d41d8cd98f00b204e9800998ecf8427e")
        XCTAssertEqual(hex("abc"), "900150983cd24fb0d6963f7d28e17f72")
        XCTAssertEqual(hex("The quick brown fox jumps over the lazy dog"), "9e107d9d372bb6826bd81d3542a419d6")
        XCTAssertEqual(hex(String(repeating: "a", count: 100)), "36a92cc94a9e0fa21f625f8bfb007adf")
    }

    func testBloomFilterOfTheSpecTests() throws {
        // From the SDK's spec "Bloom filter can process special characters in document name".
        let filter = try XCTUnwrap(BloomFilter(json: ["bits": ["bitmap": "IIAAIIAIIAAIIAIIAA==", "padding": 4], "hashCount": 10]))
        XCTAssertEqual(filter.bitCount, 13 * 8 - 4)
        XCTAssertTrue(filter.mightContain("projects/test-project/databases/(default)/documents/collection/ÀÒ∑"))
        XCTAssertFalse(filter.mightContain("projects/test-project/databases/(default)/documents/collection/À∑Ò"))
        // Malformed or empty filters count as none (the SDK re-runs the query instead).
        XCTAssertNil(BloomFilter(json: ["bits": ["bitmap": "AQ==", "padding": 8], "hashCount": 1]))
        XCTAssertNil(BloomFilter(json: ["bits": ["bitmap": "AQ==", "padding": 1], "hashCount": 0]))
        XCTAssertNil(BloomFilter(json: ["bits": ["bitmap": "", "padding": 0], "hashCount": 1]))
        XCTAssertNil(BloomFilter(json: ["bits": ["bitmap": "%%", "padding": 0], "hashCount": 1]))
        XCTAssertNil(BloomFilter(json: nil))
    }

    private func doc(_ key: String, at micros: Int64) -> Document {
        let time = Timestamp(microseconds: micros)
        return Document(path: try! ResourcePath.parse(key), fields: [:], createTime: time, updateTime: time)
    }

    private func view(_ targets: [Int: WatchTarget], keys: [Int: Set<ResourcePath>] = [:]) -> WatchTargetView {
        WatchTargetView(targets: targets, remoteKeys: { keys[$0] ?? [] }, database: database)
    }

    private func target(_ id: Int, _ collection: String = "c") -> WatchTarget {
        WatchTarget(id: id, query: Query(collectionID: collection), purpose: .listen)
    }

    func testChangesCountOnlyForAcknowledgedTargetsAndArriveAtTheSnapshot() {
        var aggregator = WatchChangeAggregator()
        let targets = view([2: target(2)])
        aggregator.recordPendingRequest(2)
        // Before the ack the target is pending: its documents and CURRENT are dropped.
        aggregator.handle(.documentChange(doc("c/early", at: 1), targetIDs: [2], removedTargetIDs: []), targets)
        aggregator.handle(.targetChange(kind: .current, targetIDs: [2], cause: nil, resumeToken: "t0", readTime: nil), targets)
        XCTAssertNotNil(aggregator.unexpectedResponse(.targetChange(kind: .add, targetIDs: [2, 2], cause: nil, resumeToken: "", readTime: nil)))
        aggregator.handle(.targetChange(kind: .add, targetIDs: [2], cause: nil, resumeToken: "", readTime: nil), targets)
        XCTAssertNil(aggregator.unexpectedResponse(.targetChange(kind: .noChange, targetIDs: [], cause: nil, resumeToken: "", readTime: nil)))
        aggregator.handle(.documentChange(doc("c/a", at: 1000), targetIDs: [2], removedTargetIDs: []), targets)
        aggregator.handle(.targetChange(kind: .current, targetIDs: [2], cause: nil, resumeToken: "t1", readTime: nil), targets)
        let event = aggregator.createRemoteEvent(at: Timestamp(microseconds: 1000), targets)
        let change = event.targetChanges[2]
        XCTAssertEqual(change?.added, [try! ResourcePath.parse("c/a")])
        XCTAssertEqual(change?.current, true)
        XCTAssertEqual(change?.resumeToken, "t1")
        XCTAssertEqual(Set(event.documentUpdates.keys), [try! ResourcePath.parse("c/a")])
        // The next snapshot starts empty.
        XCTAssertTrue(aggregator.createRemoteEvent(at: Timestamp(microseconds: 2000), targets).documentUpdates.isEmpty)
    }

    func testExistenceFilterMismatchResetsTheTargetUnlessTheBloomFilterExplainsIt() {
        let a = try! ResourcePath.parse("collection/ÀÒ∑"), b = try! ResourcePath.parse("collection/À∑Ò")
        let targets = view([2: target(2, "collection")], keys: [2: [a, b]])
        let bloom: JSON = ["bits": ["bitmap": "IIAAIIAIIAAIIAIIAA==", "padding": 4], "hashCount": 10]

        // The bloom filter holds a but not b: b leaves the target, no reset.
        var aggregator = WatchChangeAggregator()
        aggregator.handle(.filter(targetID: 2, count: 1, unchangedNames: bloom), targets)
        var event = aggregator.createRemoteEvent(at: Timestamp(microseconds: 2000), targets)
        XCTAssertEqual(event.targetChanges[2]?.removed, [b])
        XCTAssertTrue(event.targetMismatches.isEmpty)

        // A count the filter cannot explain: everything leaves, the target is listened to again.
        aggregator = WatchChangeAggregator()
        aggregator.handle(.filter(targetID: 2, count: 0, unchangedNames: bloom), targets)
        event = aggregator.createRemoteEvent(at: Timestamp(microseconds: 2000), targets)
        XCTAssertEqual(event.targetChanges[2]?.removed, [a, b])
        XCTAssertEqual(event.targetChanges[2]?.current, false)
        XCTAssertEqual(event.targetMismatches[2], .existenceFilterMismatchBloom)

        // Without a filter: a plain mismatch.
        aggregator = WatchChangeAggregator()
        aggregator.handle(.filter(targetID: 2, count: 5, unchangedNames: nil), targets)
        XCTAssertEqual(aggregator.createRemoteEvent(at: Timestamp(microseconds: 2000), targets).targetMismatches[2], .existenceFilterMismatch)
    }

    func testACurrentDocumentTargetWithoutItsDocumentSynthesizesADelete() {
        let path = try! ResourcePath.parse("c/missing")
        var lookup = WatchTarget(id: 1, query: .lookup(path, database: database), purpose: .limboResolution)
        lookup.lookupPath = path
        let targets = view([1: lookup])
        var aggregator = WatchChangeAggregator()
        aggregator.recordPendingRequest(1)
        aggregator.handle(.targetChange(kind: .add, targetIDs: [1], cause: nil, resumeToken: "", readTime: nil), targets)
        aggregator.handle(.targetChange(kind: .current, targetIDs: [1], cause: nil, resumeToken: "t", readTime: nil), targets)
        let event = aggregator.createRemoteEvent(at: Timestamp(microseconds: 3000), targets)
        XCTAssertEqual(event.documentUpdates[path], .missing(version: Timestamp(microseconds: 3000)))
        XCTAssertEqual(event.resolvedLimboDocuments, [path])
    }

    func testLimboLookupsUseOddIdsAndRespectTheConcurrencyLimit() {
        var limbo = LimboResolutions(maxConcurrent: 1)
        let a = try! ResourcePath.parse("c/a"), b = try! ResourcePath.parse("c/b")
        var actions = limbo.update(targetID: 2, limbo: [a, b])
        XCTAssertEqual(actions.listen.map(\.targetID), [1])
        XCTAssertEqual(actions.listen.map(\.path), [a])
        XCTAssertEqual(limbo.enqueued, [b])
        // a leaves limbo: its lookup ends and b's starts with the next odd id.
        actions = limbo.update(targetID: 2, limbo: [b])
        XCTAssertEqual(actions.unlisten, [1])
        XCTAssertEqual(actions.listen.map(\.targetID), [3])
        // A document two views hold in limbo is looked up once, until both let go.
        actions = limbo.update(targetID: 4, limbo: [b])
        XCTAssertTrue(actions.listen.isEmpty)
        actions = limbo.removeTarget(2)
        XCTAssertTrue(actions.unlisten.isEmpty)
        actions = limbo.removeTarget(4)
        XCTAssertEqual(actions.unlisten, [3])
    }
}
