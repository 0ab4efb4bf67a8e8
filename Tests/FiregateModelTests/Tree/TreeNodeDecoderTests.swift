import XCTest
@testable import FiregateModel

final class TreeNodeDecoderTests: XCTestCase {
    func testArraysBecomeIndexedObjectsAndNullsVanish() throws {
        let decoded = try node(["a": [1, nil, 3], "b": nil, "c": [:]])
        XCTAssertEqual(Array(decoded.children!.keys), ["a"])
        XCTAssertEqual(Array(decoded.child("a").children!.keys), ["0", "2"])
        XCTAssertEqual(try node([:]), .empty)
    }

    func testValueAndPriority() throws {
        let decoded = try node(["a": [".value": 1, ".priority": "p"], "b": ["x": true, ".priority": 2.5], "c": [".priority": 1]])
        XCTAssertEqual(decoded.child("a").leaf, .int(1))
        XCTAssertEqual(decoded.child("a").priority, .string("p"))
        XCTAssertEqual(decoded.child("b").priority, .double(2.5))
        XCTAssertTrue(decoded.child("c").isEmpty)
        XCTAssertThrowsError(try node(["a": [".value": 1, "x": 2]]))
        XCTAssertThrowsError(try node(["a": ["x": 1, ".priority": true]]))
        XCTAssertThrowsError(try node(["a": ["x": 1, ".priority": [1]]]))
    }

    func testInvalidKeysFailTheWholeValue() {
        for key in ["a.b", "$x", "a#", "[", "]", "a/b", "\u{00}", "\u{1F}", "\u{7F}", "", ".other"] {
            XCTAssertThrowsError(try node(["ok": 1, "deep": ["deeper": [key: 1]]]), key) { error in
                XCTAssertEqual((error as? FiregateError)?.status, .invalidArgument)
            }
        }
        XCTAssertNoThrow(try node([String(repeating: "k", count: 768): 1]))
        XCTAssertThrowsError(try node([String(repeating: "k", count: 769): 1]))
    }

    func testDepthCountsFromTheRoot() throws {
        var value: JSON = 1
        for _ in 0..<30 { value = ["a": value] }
        XCTAssertNoThrow(try node(value, at: try TreePath(validating: "x/y")))
        XCTAssertThrowsError(try node(value, at: try TreePath(validating: "x/y/z")))
    }

    func testStringSizeLimit() {
        XCTAssertThrowsError(try node(.string(String(repeating: "x", count: TreeNodeDecoder.maxStringBytes + 1)))) { error in
            XCTAssertEqual(error as? FiregateError, TreeLimits.writeTooBig)
        }
    }

    func testServerValuesNeedContext() {
        XCTAssertThrowsError(try node(["t": [".sv": "timestamp"]])) { error in
            XCTAssertEqual(error as? FiregateError, TreeNodeDecoder.needsServerValues)
        }
        XCTAssertTrue(TreeNodeDecoder.containsServerValues(["a": [["b": [".sv": "timestamp"]]]]))
        XCTAssertFalse(TreeNodeDecoder.containsServerValues(["a": [1, 2]]))
        // Unknown server values are rejected even before any context is needed.
        XCTAssertThrowsError(try node(["t": [".sv": "now"]])) { error in
            XCTAssertEqual((error as? FiregateError)?.status, .invalidArgument)
        }
        XCTAssertThrowsError(try node(["t": [".sv": ["increment": "1"]]]))
        XCTAssertThrowsError(try node(["t": [".sv": "timestamp", "x": 1]]))
    }

    func testServerValuesResolveAgainstCurrentValues() throws {
        let existing = try node(["n": 5, "f": 1.5, "s": "text", "big": .int(Int64.max), "p": ["x": 1, ".priority": 10]])
        let context = TreeServerValues(nowMillis: 1234, current: { existing.node(at: $0) })
        let write: JSON = [
            "n": [".sv": ["increment": 2]], "f": [".sv": ["increment": 1]], "s": [".sv": ["increment": 3]],
            "missing": [".sv": ["increment": -1]], "big": [".sv": ["increment": 1]], "t": [".sv": "timestamp"],
            "p": ["x": 1, ".priority": [".sv": ["increment": 1]]],
        ]
        let resolved = try TreeNodeDecoder.decode(write, at: .root, serverValues: context)
        XCTAssertEqual(resolved.child("n").leaf, .int(7))
        XCTAssertEqual(resolved.child("f").leaf, .double(2.5))
        XCTAssertEqual(resolved.child("s").leaf, .int(3))
        XCTAssertEqual(resolved.child("missing").leaf, .int(-1))
        XCTAssertEqual(resolved.child("big").leaf, .double(Double(Int64.max) + 1))
        XCTAssertEqual(resolved.child("t").leaf, .int(1234))
        XCTAssertEqual(resolved.child("p").priority, .int(11))
    }

    func testNumbersBeyondDoubleRangeAreRefused() throws {
        for text in ["1e999", "{\"a\":-1e999}", "[1E400]", "{\"a\":{\".value\":1,\".priority\":1e400}}", "{\"a\":{\".sv\":{\"increment\":1e400}}}"] {
            XCTAssertThrowsError(try node(try JSONParser.parse(Array(text.utf8))), text) { error in
                XCTAssertEqual(error as? FiregateError, TreeNodeDecoder.numberOutOfRangeError, text)
            }
        }
        let existing = try node(["n": .double(Double.greatestFiniteMagnitude)])
        let context = TreeServerValues(nowMillis: 0, current: { existing.node(at: $0) })
        XCTAssertThrowsError(try TreeNodeDecoder.decode(["n": [".sv": ["increment": .double(Double.greatestFiniteMagnitude)]]], at: .root,
                                                        serverValues: context)) { error in
            XCTAssertEqual(error as? FiregateError, TreeNodeDecoder.numberOutOfRangeError)
        }
        XCTAssertEqual(try node(try JSONParser.parse(Array("1.7976931348623157e308".utf8))).leaf, .double(Double.greatestFiniteMagnitude))
    }

    func testIncrementArithmetic() {
        XCTAssertEqual(TreeServerValues.increment(.int(1), by: 2), .int(3))
        XCTAssertEqual(TreeServerValues.increment(.int(1), by: 0.5), .double(1.5))
        XCTAssertEqual(TreeServerValues.increment(.double(1), by: 2), .double(3))
        XCTAssertEqual(TreeServerValues.increment(.int(Int64.min), by: -1), .double(Double(Int64.min) - 1))
        XCTAssertEqual(TreeServerValues.increment(.bool(true), by: 4), .int(4))
        XCTAssertEqual(TreeServerValues.increment(nil, by: 4.25), .double(4.25))
    }
}
