@testable import FiregateEdge
import FiregateModel
import XCTest

/// The SDK's tree cache policy: least recently used inactive queries go first, active ones
/// never, data a remaining query holds stays.
final class TreeCachePrunerTests: XCTestCase {
    func fill(_ cache: inout TreeServerCache, _ at: String, bytes: Int, lastUse: Int64, active: Bool = false) {
        let value = TreeNode(leaf: .string(String(repeating: "x", count: bytes)))
        _ = cache.applyServerResult(value, for: .all(path(at)), now: lastUse)
        cache.setActive(.all(path(at)), active, now: lastUse)
    }

    func testOldestInactiveQueriesGoUntilTheCacheFits() {
        var cache = TreeServerCache()
        fill(&cache, "old", bytes: 400, lastUse: 1)
        fill(&cache, "mid", bytes: 400, lastUse: 2)
        fill(&cache, "new", bytes: 400, lastUse: 3)
        fill(&cache, "kept", bytes: 400, lastUse: 0, active: true)
        let result = TreeCachePruner.prune(&cache, maxBytes: 1000)
        XCTAssertEqual(result.queries.map(\.0.path), [path("old"), path("mid")])
        XCTAssertEqual(cache.root.node(at: path("old")), .empty)
        XCTAssertNotEqual(cache.root.node(at: path("kept")), .empty)
        XCTAssertNotEqual(cache.root.node(at: path("new")), .empty)
        XCTAssertLessThanOrEqual(cache.byteSize(), 1000)
    }

    func testDataARemainingQueryHoldsStays() {
        var cache = TreeServerCache()
        _ = cache.applyServerResult(node(#"{"a":"1","b":{"c":"2"}}"#), for: .all(path("p")), now: 1)
        cache.setActive(.all(path("p/b")), true, now: 2)
        _ = TreeCachePruner.prune(&cache, maxBytes: 0)
        XCTAssertEqual(cache.root, node(#"{"p":{"b":{"c":"2"}}}"#))
        XCTAssertNil(cache.tracked[.all(path("p"))])
    }

    func testTooManyInactiveQueriesArePrunedEvenUnderTheSize() {
        var cache = TreeServerCache()
        for i in 0..<1010 { cache.setActive(.all(path("q\(i)")), false, now: Int64(i)) }
        let result = TreeCachePruner.prune(&cache, maxBytes: 1 << 30)
        XCTAssertEqual(result.queries.count, 202)  // ceil(20 % of 1 010), more than the 10 over
        XCTAssertEqual(result.queries.first?.0, .all(path("q0")))
    }
}
