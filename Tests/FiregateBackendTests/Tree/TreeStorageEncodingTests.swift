import FiregateBackend
import FiregateModel
import FiregateStore
import XCTest

final class TreeStorageEncodingTests: XCTestCase {
    func testRowsRoundTrip() {
        let value = tree(["a": ["b": 1, "c": [".value": "s", ".priority": 2]], "d": ["e": true, ".priority": "p"], "f": 1.5, "g": [1, 2]])
        let rows = TreeStorageEncoding.rows(for: value, at: .root)
        XCTAssertEqual(Set(rows.map(\.path)), ["a/b", "a/c", "d", "d/e", "f", "g/0", "g/1"])
        XCTAssertEqual(rows.first { $0.path == "d" }, TreeStorageRow(path: "d", value: nil, priority: "\"p\""))
        XCTAssertEqual(TreeStorageEncoding.tree(from: rows.shuffled()), value)
        XCTAssertEqual(TreeStorageEncoding.tree(from: []), .empty)
    }

    func testRowsAtALocation() {
        let rows = TreeStorageEncoding.rows(for: tree(["x": 1]), at: path("a/b"))
        XCTAssertEqual(rows, [TreeStorageRow(path: "a/b/x", value: "1", priority: nil)])
        let leafAtRoot = TreeStorageEncoding.rows(for: tree("v"), at: .root)
        XCTAssertEqual(leafAtRoot, [TreeStorageRow(path: "", value: "\"v\"", priority: nil)])
    }

    func testOperationsTouchOnlyTheWriteAndItsAncestors() {
        var root = tree(["a": ["b": ["c": 1], ".priority": 1], "big": Array(repeating: JSON.int(1), count: 100).asJSON])
        root.set(tree(["x": 2]), at: path("a/b"))
        let operations = TreeStorageEncoding.operations(replacing: [path("a/b")], in: root)
        XCTAssertEqual(operations, [
            .deleteRow("a"), .putRow(TreeStorageRow(path: "a", value: nil, priority: "1")), .deleteRow(""),
            .deleteSubtree("a/b"), .putRow(TreeStorageRow(path: "a/b/x", value: "2", priority: nil)),
        ])
    }
}

extension Array where Element == JSON {
    var asJSON: JSON { .array(self) }
}
