import XCTest
@testable import FiregateModel

final class TreePushIDTests: XCTestCase {
    func testShapeAndTimestamp() {
        var generator = PushIDGenerator()
        let id = generator.next(nowMillis: 1_700_000_000_000)
        XCTAssertEqual(id.count, 20)
        XCTAssertTrue(id.utf8.allSatisfy { PushIDGenerator.alphabet.contains($0) })
        XCTAssertEqual(PushIDGenerator.timestamp(of: id), 1_700_000_000_000)
    }

    func testStrictlyIncreasingWithinOneMillisecondAndAcrossClockSteps() {
        var generator = PushIDGenerator()
        var ids: [String] = []
        for _ in 0..<1000 { ids.append(generator.next(nowMillis: 42)) }
        ids.append(generator.next(nowMillis: 41))  // clock stepped back
        ids.append(generator.next(nowMillis: 43))
        for (a, b) in zip(ids, ids.dropFirst()) {
            XCTAssertTrue(Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)), "\(a) !< \(b)")
            XCTAssertTrue(TreeKeyOrder.less(a, b))
        }
        XCTAssertEqual(Set(ids).count, ids.count)
    }

    func testTimeOrderedAcrossMilliseconds() {
        var generator = PushIDGenerator()
        let early = generator.next(nowMillis: 1000)
        let late = generator.next(nowMillis: 1001)
        XCTAssertTrue(early < late)
        XCTAssertEqual(PushIDGenerator.timestamp(of: late), 1001)
    }
}
