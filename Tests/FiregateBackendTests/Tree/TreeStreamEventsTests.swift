import FiregateBackend
import FiregateModel
import XCTest

/// The event computation of tree streams, without any server.
final class TreeStreamEventsTests: XCTestCase {
    func updates(_ change: TreeChange, at location: String, before: JSON = nil, after: JSON = nil) -> [TreeStreamUpdate] {
        TreeStreamEvents.updates(for: change, at: path(location), before: tree(before), after: tree(after))
    }

    func set(_ location: String, _ json: JSON) -> TreeChange { TreeChange(path: path(location), operation: .set(tree(json))) }

    func merge(_ location: String, _ entries: [(String, JSON)]) -> TreeChange {
        TreeChange(path: path(location), operation: .merge(entries.map { TreePatchEntry(path: path($0.0), node: tree($0.1)) }))
    }

    func testSetAtAndBelowIsForwardedRelative() {
        XCTAssertEqual(updates(set("a/b", ["x": 1]), at: "a/b"), [.put(.root, tree(["x": 1]))])
        XCTAssertEqual(updates(set("a/b/c/d", 2), at: "a/b"), [.put(path("c/d"), tree(2))])
        XCTAssertEqual(updates(set("a/b/c", nil), at: "a/b"), [.put(path("c"), .empty)])
        XCTAssertEqual(updates(set("a/b", 1), at: ""), [.put(path("a/b"), tree(1))])
    }

    func testSetAboveSendsTheNewValueOnlyWhenChanged() {
        XCTAssertEqual(updates(set("a", ["b": 2]), at: "a/b", before: 1, after: 2), [.put(.root, tree(2))])
        XCTAssertEqual(updates(set("a", ["b": 1, "c": 2]), at: "a/b", before: 1, after: 1), [])
        XCTAssertEqual(updates(set("", nil), at: "a/b", before: 1, after: nil), [.put(.root, .empty)])
    }

    func testUnrelatedChangesAreIgnored() {
        XCTAssertEqual(updates(set("a/c", 1), at: "a/b"), [])
        XCTAssertEqual(updates(set("ab", 1), at: "a"), [])
        XCTAssertEqual(updates(merge("a", [("c", 1), ("d/e", 2)]), at: "a/b"), [])
    }

    func testMergeAtAndBelowIsAPatch() {
        let change = merge("a", [("x", 1), ("y/z", nil)])
        XCTAssertEqual(updates(change, at: "a"), [.patch(.root, [TreePatchEntry(path: path("x"), node: tree(1)), TreePatchEntry(path: path("y/z"), node: .empty)])])
        XCTAssertEqual(updates(change, at: ""), [.patch(path("a"), [TreePatchEntry(path: path("x"), node: tree(1)), TreePatchEntry(path: path("y/z"), node: .empty)])])
        XCTAssertEqual(updates(merge("a", []), at: "a"), [])
    }

    func testMergeAboveBecomesPutOrPatch() {
        // An entry covering the location replaces it.
        XCTAssertEqual(updates(merge("", [("a/b", 5), ("c", 1)]), at: "a/b/x", before: 1, after: nil), [.put(.root, .empty)])
        XCTAssertEqual(updates(merge("", [("a", ["b": 3])]), at: "a/b", before: 1, after: 3), [.put(.root, tree(3))])
        XCTAssertEqual(updates(merge("", [("a", ["b": 3])]), at: "a/b", before: 3, after: 3), [])
        // Entries inside the location become a patch at its root, with relative keys.
        XCTAssertEqual(updates(merge("", [("a/b/x", 1), ("a/b/y/z", 2), ("q", 3)]), at: "a/b"),
                       [.patch(.root, [TreePatchEntry(path: path("x"), node: tree(1)), TreePatchEntry(path: path("y/z"), node: tree(2))])])
    }

    func testPayloadAndFraming() {
        let update = TreeStreamUpdate.patch(path("a"), [TreePatchEntry(path: path("b/c"), node: tree(1)), TreePatchEntry(path: path("d"), node: .empty)])
        XCTAssertEqual(String(decoding: update.payload(format: .plain), as: UTF8.self), #"{"path":"/a","data":{"b/c":1,"d":null}}"#)
        let frame = TreeStreamFrame(.put(.root, tree(["x": [".value": 1, ".priority": 2]])), format: .export)
        XCTAssertEqual(String(decoding: frame.bytes, as: UTF8.self), "event: put\ndata: {\"path\":\"/\",\"data\":{\"x\":{\".value\":1,\".priority\":2}}}\n\n")
        XCTAssertEqual(String(decoding: TreeStreamFrame.keepAlive.bytes, as: UTF8.self), "event: keep-alive\ndata: null\n\n")
        XCTAssertEqual(String(decoding: TreeStreamFrame.cancel("Permission denied").bytes, as: UTF8.self), "event: cancel\ndata: \"Permission denied\"\n\n")
    }

    func entries(_ pairs: [(String, JSON)]) -> [TreeQueryEntry] {
        let query = TreeQuery(index: .key, limit: .first(100))
        var all: [TreeQueryEntry] = []
        for (key, value) in pairs {
            if case .children(let found) = TreeQueryEvaluator.evaluate(query, on: tree([key: value])) { all += found }
        }
        return all
    }

    func testWindowUpdates() {
        let before = entries([("a", ["s": 1]), ("b", ["s": 2])])
        // Nothing in the window changed.
        XCTAssertEqual(TreeStreamEvents.windowUpdates(for: set("q/z", 1), at: path("q"), previous: before, current: before), [])
        // A change inside a child that stays is forwarded as is.
        let inside = entries([("a", ["s": 1, "n": "x"]), ("b", ["s": 2])])
        XCTAssertEqual(TreeStreamEvents.windowUpdates(for: set("q/a/n", "x"), at: path("q"), previous: before, current: inside),
                       [.put(path("a/n"), tree("x"))])
        // One child replaced.
        let replaced = entries([("a", ["s": 1]), ("b", ["s": 5])])
        XCTAssertEqual(TreeStreamEvents.windowUpdates(for: set("q/b", ["s": 5]), at: path("q"), previous: before, current: replaced),
                       [.put(path("b"), tree(["s": 5]))])
        // A child enters and another leaves: one patch with null for the leaver.
        let shifted = entries([("b", ["s": 2]), ("c", ["s": 3])])
        XCTAssertEqual(TreeStreamEvents.windowUpdates(for: set("q/c", ["s": 3]), at: path("q"), previous: before, current: shifted),
                       [.patch(.root, [TreePatchEntry(path: path("c"), node: tree(["s": 3])), TreePatchEntry(path: path("a"), node: .empty)])])
        // A child leaves alone.
        XCTAssertEqual(TreeStreamEvents.windowUpdates(for: set("q/a", nil), at: path("q"), previous: before, current: entries([("b", ["s": 2])])),
                       [.put(path("a"), .empty)])
    }
}
