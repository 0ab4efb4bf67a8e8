import FiregateBackend
@testable import FiregateEdge
import FiregateModel
import XCTest

/// Pending writes laid over server data, and what they make complete.
final class TreeWriteTreeTests: XCTestCase {
    func set(_ id: Int64, _ at: String, _ value: String) -> TreeUserWrite {
        TreeUserWrite(id: id, path: path(at), change: .set(node(value)), wire: .set(.null), durable: true)
    }

    func merge(_ id: Int64, _ at: String, _ entries: [(String, String)]) -> TreeUserWrite {
        TreeUserWrite(id: id, path: path(at), change: .merge(entries.map { TreePatchEntry(path: path($0.0), node: node($0.1)) }),
                      wire: .merge([]), durable: true)
    }

    func testWritesApplyInIdOrderAboveAtAndBelowTheLocation() {
        var tree = TreeWriteTree()
        tree.add(merge(3, "a", [("b/c", "3"), ("x", "null")]))
        tree.add(set(1, "", #"{"a":{"b":{"c":1,"d":1},"x":1}}"#))
        tree.add(set(2, "a/b/d", "2"))
        XCTAssertEqual(tree.writes.map(\.id), [1, 2, 3])
        XCTAssertEqual(tree.overlay(.empty, at: path("a")), node(#"{"b":{"c":3,"d":2}}"#))
        XCTAssertEqual(tree.overlay(node("9"), at: path("a/b/d")), node("2"))
        // The set at the root covers every location, cached data or not.
        XCTAssertEqual(tree.overlay(node(#"{"q":1}"#), at: path("elsewhere")), .empty)
        tree.remove(1)
        XCTAssertEqual(tree.overlay(node(#"{"q":1}"#), at: path("elsewhere")), node(#"{"q":1}"#))
    }

    func testOnlyASetAtOrAboveMakesALocationComplete() {
        var tree = TreeWriteTree()
        tree.add(merge(1, "m", [("k", "1")]))
        tree.add(set(2, "s/t", "1"))
        XCTAssertFalse(tree.coversCompletely(path("m")))
        XCTAssertFalse(tree.coversCompletely(path("s")))
        XCTAssertTrue(tree.coversCompletely(path("s/t")))
        XCTAssertTrue(tree.coversCompletely(path("s/t/u")))
        XCTAssertTrue(tree.touches(path("s")))
        XCTAssertFalse(tree.touches(path("x")))
        tree.remove(2)
        XCTAssertFalse(tree.coversCompletely(path("s/t")))
    }
}
