@testable import FiregateEdge
import FiregateModel
import XCTest

/// What the client's tree cache calls complete (docs/wire/realtime-database.md, Complete views).
final class TreeServerCacheTests: XCTestCase {
    func spec(_ at: String, _ parameters: [String: String] = [:]) -> TreeQuerySpec {
        TreeQuerySpec(path: path(at), query: try! TreeQueryParser.parse(parameters), parameters: parameters)
    }

    let lastFour = ["orderBy": "\"$value\"", "limitToLast": "4"]

    func testAFilteredQueryKnowsOnlyItsKeysAndOthersSeeThemAsIncomplete() {
        var cache = TreeServerCache()
        let result = node(#"{"c":3,"d":4,"e":5,"f":6}"#)
        _ = cache.applyServerResult(result, for: spec("scores", lastFour), now: 0)
        let same = cache.serverData(for: spec("scores", lastFour))
        XCTAssertTrue(same.complete)
        XCTAssertEqual(same.node, result)
        let lastTwo = cache.serverData(for: spec("scores", ["orderBy": "\"$value\"", "limitToLast": "2"]))
        XCTAssertFalse(lastTwo.complete)
        XCTAssertEqual(lastTwo.node, result)
        XCTAssertFalse(cache.serverData(for: spec("scores")).complete)
    }

    func testADefaultQueryCompletesItsLocationAndEverythingUnderIt() {
        var cache = TreeServerCache()
        cache.setActive(spec("room/a", ["orderBy": "\"$key\"", "limitToFirst": "1"]), true, now: 0)
        _ = cache.applyServerResult(node(#"{"a":{"x":1,"y":2},"b":3}"#), for: spec("room"), now: 0)
        XCTAssertTrue(cache.serverData(for: spec("room/a")).complete)
        XCTAssertTrue(cache.serverData(for: spec("room/a", ["orderBy": "\"$key\"", "limitToFirst": "1"])).complete)
        XCTAssertTrue(cache.tracked[spec("room/a", ["orderBy": "\"$key\"", "limitToFirst": "1"])]!.complete)
        XCTAssertFalse(cache.serverData(for: spec("other")).complete)
    }

    func testKnownCompleteChildrenComeFromChildDefaultQueries() {
        var cache = TreeServerCache()
        _ = cache.applyServerResult(node(#"{"n":1}"#), for: spec("p/kid"), now: 0)
        let parent = cache.serverData(for: spec("p"))
        XCTAssertFalse(parent.complete)
        XCTAssertEqual(parent.node, node(#"{"kid":{"n":1}}"#))
    }

    func testAnAcknowledgedWriteReadsAsCompleteAfterwards() {
        var cache = TreeServerCache()
        XCTAssertEqual(cache.applyAcknowledged(node("7"), at: path("w/x"), now: 5), spec("w/x"))
        XCTAssertTrue(cache.serverData(for: spec("w/x")).complete)
        XCTAssertNil(cache.applyAcknowledged(node("8"), at: path("w/x/y"), now: 6), "already covered")
    }

    func testARestoredCacheStartsWithEveryQueryInactive() {
        var cache = TreeServerCache()
        cache.setActive(spec("a"), true, now: 1)
        let restored = TreeServerCache(root: cache.root, tracked: cache.tracked.map { ($0.key, $0.value) }, now: 9)
        XCTAssertEqual(restored.tracked[spec("a")]?.active, false)
        XCTAssertEqual(restored.tracked[spec("a")]?.lastUse, 9)
    }

    func testAQueryThatOnlyOrdersIsTheDefaultQuery() {
        XCTAssertEqual(spec("a", ["orderBy": "\"$value\""]), spec("a"))
        XCTAssertEqual(TreeQuerySpec(path: "a", parameters: spec("a", lastFour).parameters), spec("a", lastFour))
    }
}
