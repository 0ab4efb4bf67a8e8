import XCTest
@testable import FiregateModel

final class TreeNodeTests: XCTestCase {
    func testSetCreatesAndDeletePrunesEmptyAncestors() throws {
        var root = TreeNode.empty
        root.set(TreeNode(leaf: .int(1)), at: try TreePath(validating: "a/b/c"))
        XCTAssertEqual(text(root), #"{"a":{"b":{"c":1}}}"#)
        root.set(TreeNode(leaf: .int(2)), at: try TreePath(validating: "a/x"))
        root.set(.empty, at: try TreePath(validating: "a/b/c"))
        XCTAssertEqual(text(root), #"{"a":{"x":2}}"#)
        root.set(.empty, at: try TreePath(validating: "a/x"))
        XCTAssertTrue(root.isEmpty)
    }

    func testLeafBecomesInnerNodeKeepingPriority() throws {
        var root = try node(["a": [".value": "leaf", ".priority": 1]])
        root.set(TreeNode(leaf: .bool(true)), at: try TreePath(validating: "a/b"))
        XCTAssertEqual(text(root, format: .export), #"{"a":{"b":true,".priority":1}}"#)
    }

    func testDeletingUnderALeafChangesNothing() throws {
        var root = try node(["a": "leaf"])
        root.set(.empty, at: try TreePath(validating: "a/b"))
        XCTAssertEqual(text(root), #"{"a":"leaf"}"#)
    }

    func testPriorityPseudoChild() throws {
        var root = try node(["a": ["x": 1]])
        root.set(TreeNode(leaf: .int(5)), at: try TreePath(validating: "a/.priority"))
        XCTAssertEqual(root.node(at: try TreePath(validating: "a/.priority")).leaf, .int(5))
        XCTAssertEqual(root.node(at: try TreePath(validating: "a")).priority, .int(5))
        // Priority on an empty node is dropped; emptying a node drops its priority.
        root.set(TreeNode(leaf: .int(1)), at: try TreePath(validating: "nothing/.priority"))
        XCTAssertTrue(root.node(at: try TreePath(validating: "nothing")).isEmpty)
        root.set(.empty, at: try TreePath(validating: "a/x"))
        root.set(TreeNode(leaf: .int(2)), at: try TreePath(validating: "a/y"))
        XCTAssertNil(root.node(at: try TreePath(validating: "a")).priority)
    }

    func testCopiesAreIndependent() throws {
        var root = try node(["a": ["b": 1]])
        let copy = root
        root.set(TreeNode(leaf: .int(2)), at: try TreePath(validating: "a/b"))
        XCTAssertEqual(text(copy), #"{"a":{"b":1}}"#)
        XCTAssertEqual(text(root), #"{"a":{"b":2}}"#)
    }
}
