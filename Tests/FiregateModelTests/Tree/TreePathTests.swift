import XCTest
@testable import FiregateModel

final class TreePathTests: XCTestCase {
    func testParsingIgnoresEmptySegments() throws {
        XCTAssertEqual(try TreePath(validating: "/a//b/").keys, ["a", "b"])
        XCTAssertTrue(try TreePath(validating: "/").isRoot)
        XCTAssertEqual(try TreePath(validating: "a/b").description, "/a/b")
        XCTAssertEqual(TreePath.root.description, "/")
    }

    func testInvalidTokensAreRejected() {
        for bad in ["a.b", "a$", "#", "x[y", "x]y", "a\u{01}", "a\u{7F}", "a/.value"] {
            XCTAssertThrowsError(try TreePath(validating: bad), bad) { error in
                XCTAssertEqual(error as? FiregateError, TreePath.invalidPathError)
            }
        }
    }

    func testPriorityOnlyAsLastKey() throws {
        XCTAssertTrue(try TreePath(validating: "a/.priority").isPriority)
        XCTAssertThrowsError(try TreePath(validating: ".priority/a"))
        XCTAssertThrowsError(try TreePath(validating: "a/.priority", allowPriority: false))
    }

    func testKeyLengthAndDepth() throws {
        XCTAssertNoThrow(try TreePath(validating: String(repeating: "k", count: 768)))
        XCTAssertThrowsError(try TreePath(validating: String(repeating: "k", count: 769)))
        XCTAssertNoThrow(try TreePath(validating: Array(repeating: "a", count: 32).joined(separator: "/")))
        XCTAssertThrowsError(try TreePath(validating: Array(repeating: "a", count: 33).joined(separator: "/")))
        // Multi-byte characters count in bytes.
        XCTAssertThrowsError(try TreePath(validating: String(repeating: "é", count: 385)))
    }

    func testContainmentAndRelativePaths() throws {
        let a = try TreePath(validating: "a")
        let abc = try TreePath(validating: "a/b/c")
        XCTAssertTrue(a.contains(abc))
        XCTAssertTrue(a.contains(a))
        XCTAssertFalse(abc.contains(a))
        XCTAssertFalse(try TreePath(validating: "ab").contains(abc))
        XCTAssertEqual(a.relativePath(to: abc)?.description, "/b/c")
        XCTAssertNil(abc.relativePath(to: a))
        XCTAssertTrue(TreePath.root.contains(a))
    }
}
