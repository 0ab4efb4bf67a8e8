@testable import FiregateBackend
import FiregateModel
import XCTest

/// The collection and collection-group indexes a database keeps beside its documents.
final class DatabaseStateTests: XCTestCase {
    private func document(_ path: String) -> Document {
        Document(path: rpath(path), fields: [:], createTime: Timestamp(seconds: 1, nanos: 0), updateTime: Timestamp(seconds: 1, nanos: 0))
    }

    private func candidates(_ state: DatabaseState, _ query: Query) -> [String] {
        state.candidates(for: query, at: nil).map(\.path.canonical).sorted()
    }

    func testGroupsFollowCollectionsAsTheyFillAndEmpty() {
        var state = DatabaseState()
        for path in ["c/x", "a/1/c/y", "a/1/c/z", "a/2/c/w", "a/1/d/v"] { state.put(document(path)) }
        XCTAssertEqual(state.groups["c"], [rpath("c"), rpath("a/1/c"), rpath("a/2/c")])
        XCTAssertEqual(candidates(state, Query(collectionID: "c", allDescendants: true)), ["a/1/c/y", "a/1/c/z", "a/2/c/w", "c/x"])
        XCTAssertEqual(candidates(state, Query(parent: rpath("a/1"), collectionID: "c", allDescendants: true)), ["a/1/c/y", "a/1/c/z"])

        // Overwriting a document changes no index.
        state.put(document("a/1/c/y"))
        XCTAssertEqual(state.collections[rpath("a/1/c")]?.count, 2)

        // A collection leaves its group only with its last document.
        state.remove(rpath("a/1/c/y"))
        XCTAssertEqual(state.groups["c"]?.contains(rpath("a/1/c")), true)
        state.remove(rpath("a/1/c/z"))
        XCTAssertEqual(state.groups["c"], [rpath("c"), rpath("a/2/c")])
        XCTAssertNil(state.collections[rpath("a/1/c")])
        XCTAssertEqual(candidates(state, Query(parent: rpath("a/1"), collectionID: "c", allDescendants: true)), [])

        state.remove(rpath("c/x"))
        state.remove(rpath("a/2/c/w"))
        XCTAssertNil(state.groups["c"])
        XCTAssertEqual(state.groups["d"], [rpath("a/1/d")])
        // Removing what is not there changes nothing.
        state.remove(rpath("a/2/c/w"))
        XCTAssertEqual(state.documents.count, 1)
    }
}
