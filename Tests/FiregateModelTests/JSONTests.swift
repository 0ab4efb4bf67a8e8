@testable import FiregateModel
import FiregateTestSupport
import XCTest

final class JSONParserTests: XCTestCase {
    func testParsesEveryKind() throws {
        let value = try JSONParser.parse(#" { "a" : [1, -2.5, true, false, null, "x"], "b": {}, "c": [] } "#)
        XCTAssertEqual(value, ["a": [1, -2.5, true, false, nil, "x"], "b": [:], "c": []])
    }

    func testObjectKeepsKeyOrderAndLastDuplicateWins() throws {
        let value = try JSONParser.parse(#"{"z":1,"a":2,"z":3}"#)
        XCTAssertEqual(value.objectValue?.keys.elements, ["z", "a"])
        XCTAssertEqual(value["z"], .int(3))
    }

    func testNumbersKeepIntegerness() throws {
        XCTAssertEqual(try JSONParser.parse("42"), .int(42))
        XCTAssertEqual(try JSONParser.parse("-0"), .int(0))
        XCTAssertEqual(try JSONParser.parse("1.0"), .double(1))
        XCTAssertEqual(try JSONParser.parse("1e2"), .double(100))
        XCTAssertEqual(try JSONParser.parse("1E-2"), .double(0.01))
        XCTAssertEqual(try JSONParser.parse("9223372036854775807"), .int(.max))
        XCTAssertEqual(try JSONParser.parse("-9223372036854775808"), .int(.min))
        // Beyond int64 the number is kept as a double rather than refused.
        XCTAssertEqual(try JSONParser.parse("9223372036854775808"), .double(9_223_372_036_854_775_808))
    }

    func testEscapes() throws {
        let value = try JSONParser.parse(#""q\"b\\s\/b\bf\fn\nr\rt\tu\u0041\u00e9""#)
        XCTAssertEqual(value, .string("q\"b\\s/b\u{8}f\u{c}n\nr\rt\tuAé"))
    }

    func testSurrogatePairs() throws {
        XCTAssertEqual(try JSONParser.parse(#""\ud83d\ude00""#), .string("😀"))
        XCTAssertEqual(try JSONParser.parse(#""a\uD83D\uDE00b""#), .string("a😀b"))
        // Raw UTF-8 passes through untouched.
        XCTAssertEqual(try JSONParser.parse("\"😀é\""), .string("😀é"))
    }

    func testUnpairedSurrogatesAreRejected() {
        for input in [#""\ud83d""#, #""\ude00""#, #""\ud83d\u0041""#, #""\ud83dx""#, #""\ud83d\""#] {
            XCTAssertThrowsError(try JSONParser.parse(input), input)
        }
    }

    func testInvalidInputs() {
        let inputs = [
            "", " ", "{", "}", "[", "[1,]", "[,1]", #"{"a":1,}"#, #"{"a"}"#, #"{"a":}"#, "{a:1}", "01", "1.", ".5", "-", "+1", "1e", "1e+",
            "tru", "nul", "falsey", "NaN", "Infinity", "'a'", "\"abc", "[1 2]", "1 2", "\"\u{01}\"", "\"a\nb\"", #""\x""#, #""\u12""#,
            #""\u12G4""#, "[1]]", "{}{}",
        ]
        for input in inputs {
            XCTAssertThrowsError(try JSONParser.parse(input), "accepted \(input.debugDescription)")
        }
    }

    func testInvalidUTF8IsRejected() {
        XCTAssertThrowsError(try JSONParser.parse([0x22, 0xFF, 0x22]))
        XCTAssertThrowsError(try JSONParser.parse([0x22, 0x5C, 0x6E, 0xC3, 0x22]))
    }

    func testErrorCarriesOffset() {
        do {
            _ = try JSONParser.parse("[1, x]")
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error.offset, 4)
            XCTAssertTrue(error.description.contains("at byte 4"))
        }
    }

    func testNestingLimit() throws {
        XCTAssertNoThrow(try JSONParser.parse("[[[]]]", maxDepth: 3))
        XCTAssertThrowsError(try JSONParser.parse("[[[]]]", maxDepth: 2)) { error in
            XCTAssertTrue("\(error)".contains("nested too deeply"))
        }
        XCTAssertThrowsError(try JSONParser.parse(#"{"a":{"b":{}}}"#, maxDepth: 2))
        let deep = String(repeating: "[", count: JSONParser.defaultMaxDepth) + String(repeating: "]", count: JSONParser.defaultMaxDepth)
        XCTAssertNoThrow(try JSONParser.parse(deep))
        // Hostile depth fails cleanly instead of overflowing the stack.
        let hostile = String(repeating: "[", count: 200_000)
        XCTAssertThrowsError(try JSONParser.parse(hostile))
        let hostileObjects = String(repeating: #"{"a":"#, count: 100_000)
        XCTAssertThrowsError(try JSONParser.parse(hostileObjects))
    }
}

final class JSONWriterTests: XCTestCase {
    func testCompactAndRoundTrip() throws {
        let value: JSON = ["b": [1, 2.5, "s", nil, true, ["x": [:]]], "a": -7, "e": []]
        let text = JSONWriter.string(value)
        XCTAssertEqual(text, #"{"b":[1,2.5,"s",null,true,{"x":{}}],"a":-7,"e":[]}"#)
        XCTAssertEqual(try JSONParser.parse(text), value)
    }

    func testPrettyStyle() {
        let value: JSON = ["a": [1, 2], "b": [:]]
        XCTAssertEqual(JSONWriter.string(value, style: .pretty), "{\n  \"a\" : [\n    1,\n    2\n  ],\n  \"b\" : {}\n}")
    }

    func testStringEscapes() throws {
        let original = "q\"b\\n\nr\rt\tb\u{8}f\u{c}c\u{1}d\u{1f}e\u{7f}/é😀"
        let text = JSONWriter.string(.string(original))
        XCTAssertEqual(text, #""q\"b\\n\nr\rt\tb\bf\fc\u0001d\u001fe\u007f/é😀""#)
        XCTAssertEqual(try JSONParser.parse(text), .string(original))
        // Escapes at either end, none at all, and nothing.
        XCTAssertEqual(JSONWriter.string(.string("\"x\n")), #""\"x\n""#)
        XCTAssertEqual(JSONWriter.string(.string("plain text")), #""plain text""#)
        XCTAssertEqual(JSONWriter.string(.string("")), "\"\"")
    }

    func testIntegersExact() {
        XCTAssertEqual(JSONWriter.string(.int(.min)), "-9223372036854775808")
        XCTAssertEqual(JSONWriter.string(.int(.max)), "9223372036854775807")
    }

    /// Expected strings are what JavaScript's `String(x)` prints.
    func testDoublesPrintLikeJavaScript() {
        let cases: [(Double, String)] = [
            (1, "1"), (-1, "-1"), (1.5, "1.5"), (0, "0"), (-0.0, "0"), (0.1, "0.1"), (-0.25, "-0.25"),
            (123.456, "123.456"), (1e16, "10000000000000000"), (9007199254740993, "9007199254740992"),
            (1e19, "10000000000000000000"), (1.2345678901234568e20, "123456789012345680000"),
            (1e21, "1e+21"), (1.5e21, "1.5e+21"), (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.000001, "0.000001"), (0.00001, "0.00001"), (0.000123, "0.000123"), (1.5e-6, "0.0000015"),
            (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (-1e-7, "-1e-7"), (1.2345e-10, "1.2345e-10"), (5e-324, "5e-324"),
            (2.5e-300, "2.5e-300"), (100, "100"), (1e300, "1e+300"),
        ]
        for (value, expected) in cases {
            XCTAssertEqual(JSONWriter.formatNumber(value), expected, "\(value)")
        }
    }

    func testNonFiniteDoublesPrintAsStrings() {
        XCTAssertEqual(JSONWriter.string(.double(.nan)), #""NaN""#)
        XCTAssertEqual(JSONWriter.string(.double(.infinity)), #""Infinity""#)
        XCTAssertEqual(JSONWriter.string(.double(-.infinity)), #""-Infinity""#)
    }

    func testDoublesRoundTripThroughText() throws {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            let bits = generator.next()
            let value = Double(bitPattern: bits)
            guard value.isFinite else { continue }
            let text = JSONWriter.formatNumber(value)
            let parsed = try JSONParser.parse(text)
            XCTAssertEqual(parsed.doubleValue, value == 0 ? 0 : value, "\(value) printed as \(text)")
        }
    }
}

final class JSONMemberTests: XCTestCase {
    func testCamelAndSnakeCase() {
        let value = json(#"{"update_mask":{"field_paths":["a"]},"currentDocument":1}"#)
        XCTAssertEqual(value.member("updateMask")?.member("fieldPaths"), ["a"])
        XCTAssertEqual(value.member("currentDocument"), 1)
        XCTAssertNil(value.member("missing"))
        XCTAssertNil(JSON.int(1).member("a"))
    }

    func testIntegerLike() {
        XCTAssertEqual(JSON.int(5).integerLike, 5)
        XCTAssertEqual(JSON.string("12").integerLike, 12)
        XCTAssertEqual(JSON.double(3).integerLike, 3)
        XCTAssertEqual(json(#"{"value":7}"#).integerLike, 7)
        XCTAssertNil(JSON.double(3.5).integerLike)
        XCTAssertNil(JSON.string("x").integerLike)
        XCTAssertNil(JSON.bool(true).integerLike)
    }

    func testErrorBody() {
        let body = JSON.errorBody(.notFound("gone"))
        XCTAssertEqual(text(body), #"{"error":{"code":404,"message":"gone","status":"NOT_FOUND"}}"#)
    }

    func testStatusMapping() {
        XCTAssertEqual(Status.aborted.httpStatus, 409)
        XCTAssertEqual(Status.alreadyExists.httpStatus, 409)
        XCTAssertEqual(Status.failedPrecondition.httpStatus, 400)
        XCTAssertEqual(Status.unavailable.httpStatus, 503)
        XCTAssertEqual(Status.cancelled.httpStatus, 499)
        XCTAssertEqual(Status(name: "permission_denied"), .permissionDenied)
        XCTAssertEqual(Status(name: "14"), .unavailable)
        XCTAssertNil(Status(name: "NOPE"))
        XCTAssertEqual(Set(Status.allCases.map(\.code)).count, 17)
    }

    func testPercentDecoding() throws {
        XCTAssertEqual(try PercentDecoding.decode("%28default%29"), "(default)")
        XCTAssertEqual(try PercentDecoding.decode("a+b%2Bc", plusAsSpace: true), "a b+c")
        XCTAssertEqual(try PercentDecoding.decode("a+b"), "a+b")
        XCTAssertEqual(try PercentDecoding.decode("100%"), "100%")
        XCTAssertEqual(try PercentDecoding.decode("%zz%4"), "%zz%4")
        XCTAssertEqual(try PercentDecoding.decode("%C3%A9"), "é")
    }

    func testPercentDecodingRefusesBytesThatAreNotUTF8() {
        for text in ["%FF", "a%C3%28b", "%ED%A0%80", "%C3"] {
            XCTAssertThrowsError(try PercentDecoding.decode(text), text) { error in
                XCTAssertEqual((error as? FiregateError)?.status, .invalidArgument, text)
            }
        }
    }
}
