@testable import FiregateModel
import FiregateTestSupport
import XCTest

final class ValueOrderTests: XCTestCase {
    let ref = "projects/p/databases/(default)/documents/"

    /// Each group holds values that compare equal; groups are strictly ascending.
    var orderedGroups: [[Value]] {
        [
            [.null],
            [.boolean(false)], [.boolean(true)],
            [.double(.nan), .double(-.nan)],
            [.double(-.infinity)],
            [.integer(.min), .double(-9_223_372_036_854_775_808)],
            [.integer(.min + 1)],
            [.double(-1.5)],
            [.integer(-1), .double(-1)],
            [.integer(0), .double(0), .double(-0.0)],
            [.double(5e-324)],
            [.double(0.5)],
            [.integer(1), .double(1)],
            [.integer(9_007_199_254_740_992), .double(9_007_199_254_740_992)],
            // 2^53 + 1 is not representable as a double: the integer must still sort above 2^53.
            [.integer(9_007_199_254_740_993)],
            [.double(9_007_199_254_740_994)],
            [.integer(.max - 1)],
            [.integer(.max)],
            [.double(9_223_372_036_854_775_808)],
            [.double(.infinity)],
            [.timestamp(Timestamp(seconds: -1, nanos: 999_999_000))],
            [.timestamp(Timestamp(seconds: 0, nanos: 0))],
            [.timestamp(Timestamp(seconds: 0, nanos: 1000))],
            [.string("")], [.string("A")], [.string("a")], [.string("ab")], [.string("b")], [.string("é")],
            // UTF-8 byte order: U+FFFF (EF BF BF) sorts before U+1F600 (F0 9F 98 80), unlike UTF-16.
            [.string("\u{FFFF}")], [.string("😀")],
            [.bytes([])], [.bytes([0])], [.bytes([0, 0])], [.bytes([1])], [.bytes([255])],
            [.reference(ref + "a/b")], [.reference(ref + "a/b/c/d")],
            // Segment-wise: "a" < "a-" even though "/" (0x2F) > "-" (0x2D) as whole strings.
            [.reference(ref + "a/b/c/e")], [.reference(ref + "a-/b")], [.reference(ref + "b/a")],
            [.geoPoint(latitude: -10, longitude: 100)], [.geoPoint(latitude: 0, longitude: -5)], [.geoPoint(latitude: 0, longitude: 5)],
            [.array([])], [.array([.null])], [.array([.integer(1)]), .array([.double(1)])], [.array([.integer(1), .integer(2)])],
            [.array([.integer(2)])], [.array([.string("a")])],
            [.map(["__type__": .string("__vector__"), "value": .array([.double(9)])])],
            [.map(["__type__": .string("__vector__"), "value": .array([.double(1), .double(2)])])],
            [.map([:])], [.map(["a": .integer(1)])], [.map(["a": .integer(1), "b": .null])], [.map(["a": .integer(2)])],
            [.map(["b": .integer(0)])],
        ]
    }

    func testTotalOrderAcrossTypes() {
        let groups = orderedGroups
        for (i, group) in groups.enumerated() {
            for a in group {
                for b in group {
                    XCTAssertEqual(Value.compare(a, b), 0, "\(a) vs \(b)")
                    XCTAssertTrue(Value.equals(a, b))
                }
                for later in groups[(i + 1)...] {
                    for b in later {
                        XCTAssertEqual(Value.compare(a, b), -1, "\(a) should sort before \(b)")
                        XCTAssertEqual(Value.compare(b, a), 1, "\(b) should sort after \(a)")
                    }
                }
            }
        }
    }

    func testSortingShuffledValuesRestoresOrder() {
        let flat = orderedGroups.map { $0[0] }
        var generator = SplitMix64(seed: 42)
        for _ in 0..<20 {
            let sorted = flat.shuffled(using: &generator).sorted { Value.compare($0, $1) < 0 }
            XCTAssertEqual(sorted.map { "\($0)" }, flat.map { "\($0)" })
        }
    }

    func testTypeOrderNumbers() {
        XCTAssertLessThan(Value.null.typeOrder, Value.boolean(true).typeOrder)
        XCTAssertEqual(Value.integer(1).typeOrder, Value.double(.nan).typeOrder)
        XCTAssertLessThan(Value.array([]).typeOrder, Value.map(["__type__": .string("__vector__")]).typeOrder)
        XCTAssertLessThan(Value.map(["__type__": .string("__vector__")]).typeOrder, Value.map([:]).typeOrder)
    }

    func testCompareUTF8() {
        XCTAssertEqual(Value.compareUTF8("a", "a"), 0)
        XCTAssertEqual(Value.compareUTF8("a", "b"), -1)
        XCTAssertEqual(Value.compareUTF8("ab", "a"), 1)
        XCTAssertEqual(Value.compareUTF8("\u{FFFF}", "😀"), -1)
        // Canonically equivalent but differently encoded strings are different byte strings.
        XCTAssertNotEqual(Value.compareUTF8("e\u{301}", "é"), 0)
    }
}
