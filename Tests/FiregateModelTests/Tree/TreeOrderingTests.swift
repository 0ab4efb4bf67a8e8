import XCTest
@testable import FiregateModel

final class TreeOrderingTests: XCTestCase {
    func testIntegerKeysComeFirstNumerically() {
        let keys = ["b", "10", "a", "9", "-5", "1a", "2147483648", "2147483647", "007", "7", "A", "_"]
        let sorted = keys.sorted(by: TreeKeyOrder.less)
        XCTAssertEqual(sorted, ["-5", "7", "007", "9", "10", "2147483647", "1a", "2147483648", "A", "_", "a", "b"])
    }

    func testIntegerKeyRecognition() {
        XCTAssertEqual(TreeKeyOrder.integerValue("0"), 0)
        XCTAssertEqual(TreeKeyOrder.integerValue("-2147483648"), -2_147_483_648)
        XCTAssertNil(TreeKeyOrder.integerValue("-2147483649"))
        XCTAssertNil(TreeKeyOrder.integerValue("2147483648"))
        XCTAssertEqual(TreeKeyOrder.integerValue("0000000000012"), 12)
        XCTAssertNil(TreeKeyOrder.integerValue("12345678901"))
        XCTAssertNil(TreeKeyOrder.integerValue("-"))
        XCTAssertNil(TreeKeyOrder.integerValue(""))
        XCTAssertNil(TreeKeyOrder.integerValue("1.5"))
        XCTAssertNil(TreeKeyOrder.integerValue("+1"))
    }

    func testTextKeysCompareByUTF16LikeJavaScript() {
        // U+FF5E (one UTF-16 unit) sorts after U+1F600 (a surrogate pair starting 0xD83D) in JS.
        XCTAssertTrue(TreeKeyOrder.less("\u{1F600}", "\u{FF5E}"))
        XCTAssertTrue(TreeKeyOrder.less("Z", "a"))
        XCTAssertTrue(TreeKeyOrder.less("a", "ab"))
    }

    func testValueOrderAcrossTypes() {
        let ranks: [TreeValueOrder.Rank] = [.object, .leaf(.string("b")), .leaf(.string("a")), .leaf(.double(2.5)),
                                            .leaf(.int(2)), .leaf(.int(-1)), .leaf(.bool(true)), .leaf(.bool(false)), .null]
        let sorted = ranks.sorted { TreeValueOrder.compare($0, $1) < 0 }
        XCTAssertEqual(sorted, [.null, .leaf(.bool(false)), .leaf(.bool(true)), .leaf(.int(-1)), .leaf(.int(2)),
                                .leaf(.double(2.5)), .leaf(.string("a")), .leaf(.string("b")), .object])
        XCTAssertEqual(TreeValueOrder.compare(.leaf(.int(3)), .leaf(.double(3))), 0)
        XCTAssertEqual(TreeValueOrder.compare(.leaf(.int(Int64.max)), .leaf(.int(Int64.max - 1))), 1)
    }

    func testPriorityOrder() {
        let priorities: [TreeLeaf?] = [.string("a"), .int(2), nil, .double(1.5)]
        let sorted = priorities.sorted { TreeValueOrder.comparePriorities($0, $1) < 0 }
        XCTAssertEqual(sorted, [nil, .double(1.5), .int(2), .string("a")])
    }

    func testChildrenStayInKeyOrderUnderInserts() {
        var kids = TreeChildren()
        for key in ["c", "10", "a", "2", "b", "1"] { kids.set(key, TreeNode(leaf: .int(1))) }
        XCTAssertEqual(Array(kids.keys), ["1", "2", "10", "a", "b", "c"])
        kids.set("2", .empty)
        XCTAssertEqual(Array(kids.keys), ["1", "10", "a", "b", "c"])
    }
}
