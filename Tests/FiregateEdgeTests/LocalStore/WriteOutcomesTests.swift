import XCTest

@testable import FiregateEdge

final class WriteOutcomesTests: XCTestCase {
    /// The last `capacity` settled outcomes stay, older ones go; a pending write is never
    /// forgotten however many settle after it.
    func testKeepsEveryPendingWriteAndTheLastSettledOnes() {
        var outcomes = WriteOutcomes<String>()
        let capacity = WriteOutcomes<String>.capacity
        outcomes.pending(0, "pending")
        for id in Int64(1)...Int64(capacity * 3 + 5) {
            outcomes.pending(id, "pending")
            outcomes.settle(id, "acknowledged \(id)")
        }
        XCTAssertEqual(outcomes[0], "pending")
        let last = Int64(capacity * 3 + 5)
        XCTAssertEqual(outcomes[last], "acknowledged \(last)")
        XCTAssertEqual(outcomes[last - Int64(capacity) + 1], "acknowledged \(last - Int64(capacity) + 1)")
        XCTAssertNil(outcomes[last - Int64(capacity)], "the settled outcome before the last \(capacity) is forgotten")
        XCTAssertNil(outcomes[1])
        outcomes.settle(0, "rejected")
        XCTAssertEqual(outcomes[0], "rejected")
        outcomes.forget(0)
        XCTAssertNil(outcomes[0])
    }
}
