@testable import FiregateModel
import XCTest

final class ValueJSONTests: XCTestCase {
    func value(_ text: String) throws -> Value { try Value(json: json(text)) }

    /// JSON → Value → JSON gives back `expected` (the canonical form), and parsing it again gives the same value.
    func assertRoundTrip(_ input: String, _ expected: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let parsed = try value(input)
        XCTAssertEqual(text(parsed.json), expected, file: file, line: line)
        let again = try Value(json: parsed.json)
        XCTAssertTrue(Value.equals(again, parsed), "\(again) != \(parsed)", file: file, line: line)
    }

    func testNull() throws {
        XCTAssertEqual(try value(#"{"nullValue":null}"#), .null)
        XCTAssertEqual(try value(#"{"nullValue":"NULL_VALUE"}"#), .null)
        XCTAssertEqual(try value(#"{"nullValue":0}"#), .null)
        XCTAssertEqual(try value(#"{"null_value":null}"#), .null)
        XCTAssertEqual(text(Value.null.json), #"{"nullValue":null}"#)
        assertFiregateError(.invalidArgument) { try value(#"{"nullValue":"x"}"#) }
        assertFiregateError(.invalidArgument) { try value(#"{"nullValue":1}"#) }
    }

    func testBoolean() throws {
        try assertRoundTrip(#"{"booleanValue":true}"#, #"{"booleanValue":true}"#)
        try assertRoundTrip(#"{"boolean_value":false}"#, #"{"booleanValue":false}"#)
        assertFiregateError(.invalidArgument) { try value(#"{"booleanValue":"true"}"#) }
        assertFiregateError(.invalidArgument) { try value(#"{"booleanValue":1}"#) }
    }

    func testIntegersAreStrings() throws {
        XCTAssertEqual(try value(#"{"integerValue":"42"}"#), .integer(42))
        XCTAssertEqual(try value(#"{"integerValue":42}"#), .integer(42))
        XCTAssertEqual(try value(#"{"integerValue":"-9223372036854775808"}"#), .integer(.min))
        XCTAssertEqual(try value(#"{"integer_value":"7"}"#), .integer(7))
        try assertRoundTrip(#"{"integerValue":9223372036854775807}"#, #"{"integerValue":"9223372036854775807"}"#)
        try assertRoundTrip(#"{"integerValue":"-5"}"#, #"{"integerValue":"-5"}"#)
        for bad in [#""9223372036854775808""#, #""x""#, #""1.5""#, "1.5", "true", "null", #""""#] {
            assertFiregateError(.invalidArgument) { try value(#"{"integerValue":\#(bad)}"#) }
        }
    }

    func testDoubles() throws {
        try assertRoundTrip(#"{"doubleValue":1.5}"#, #"{"doubleValue":1.5}"#)
        try assertRoundTrip(#"{"doubleValue":3}"#, #"{"doubleValue":3}"#)
        try assertRoundTrip(#"{"doubleValue":"2.5"}"#, #"{"doubleValue":2.5}"#)
        try assertRoundTrip(#"{"doubleValue":1e-7}"#, #"{"doubleValue":1e-7}"#)
        XCTAssertEqual(try value(#"{"doubleValue":3}"#), .double(3))
        XCTAssertTrue(try value(#"{"doubleValue":"NaN"}"#).isNaN)
        XCTAssertEqual(try value(#"{"doubleValue":"Infinity"}"#), .double(.infinity))
        XCTAssertEqual(try value(#"{"doubleValue":"-Infinity"}"#), .double(-.infinity))
        XCTAssertEqual(text(Value.double(.nan).json), #"{"doubleValue":"NaN"}"#)
        XCTAssertEqual(text(Value.double(.infinity).json), #"{"doubleValue":"Infinity"}"#)
        XCTAssertEqual(text(Value.double(-.infinity).json), #"{"doubleValue":"-Infinity"}"#)
        assertFiregateError(.invalidArgument) { try value(#"{"doubleValue":"abc"}"#) }
        assertFiregateError(.invalidArgument) { try value(#"{"doubleValue":true}"#) }
        assertFiregateError(.invalidArgument) { try value(#"{"doubleValue":null}"#) }
    }

    func testNegativeZeroKeepsItsSign() throws {
        guard case .double(let parsed) = try value(#"{"doubleValue":"-0"}"#) else { return XCTFail("not a double") }
        XCTAssertEqual(parsed.sign, .minus)
        // The browser SDK's proto3 JSON form of -0 is the string "-0": the sign must survive output.
        let out = text(Value.double(-0.0).json)
        guard case .double(let back) = try Value(json: json(out)) else { return XCTFail("not a double") }
        XCTAssertEqual(back.sign, .minus, "-0 rendered as \(out)")
        XCTAssertEqual(text(Value.double(0).json), #"{"doubleValue":0}"#)
    }

    func testTimestamps() throws {
        try assertRoundTrip(#"{"timestampValue":"2024-01-02T03:04:05Z"}"#, #"{"timestampValue":"2024-01-02T03:04:05Z"}"#)
        try assertRoundTrip(#"{"timestampValue":"2024-01-02T03:04:05.1Z"}"#, #"{"timestampValue":"2024-01-02T03:04:05.100Z"}"#)
        try assertRoundTrip(#"{"timestampValue":"2024-01-02T03:04:05.123Z"}"#, #"{"timestampValue":"2024-01-02T03:04:05.123Z"}"#)
        try assertRoundTrip(#"{"timestampValue":"2024-01-02T03:04:05.123456Z"}"#, #"{"timestampValue":"2024-01-02T03:04:05.123456Z"}"#)
        // Nanoseconds are truncated (not rounded) to microseconds, Firestore's stored precision.
        try assertRoundTrip(#"{"timestampValue":"2024-01-02T03:04:05.123456789Z"}"#, #"{"timestampValue":"2024-01-02T03:04:05.123456Z"}"#)
        try assertRoundTrip(#"{"timestampValue":"2024-01-02T03:04:05.000000999Z"}"#, #"{"timestampValue":"2024-01-02T03:04:05Z"}"#)
        try assertRoundTrip(#"{"timestampValue":"2024-01-02T05:04:05+02:00"}"#, #"{"timestampValue":"2024-01-02T03:04:05Z"}"#)
        XCTAssertEqual(try value(#"{"timestampValue":{"seconds":"10","nanos":5999}}"#), .timestamp(Timestamp(seconds: 10, nanos: 5000)))
        XCTAssertEqual(try value(#"{"timestampValue":{"seconds":10}}"#), .timestamp(Timestamp(seconds: 10, nanos: 0)))
        for bad in [#""2024-02-30T00:00:00Z""#, #""2024-01-02""#, #""nope""#, "12", #"{"seconds":"1","nanos":1000000000}"#,
                    #"{"seconds":"-62135596801"}"#] {
            assertFiregateError(.invalidArgument) { try value(#"{"timestampValue":\#(bad)}"#) }
        }
    }

    func testStrings() throws {
        try assertRoundTrip(#"{"stringValue":"héllo \"😀\""}"#, #"{"stringValue":"héllo \"😀\""}"#)
        try assertRoundTrip(#"{"stringValue":""}"#, #"{"stringValue":""}"#)
        assertFiregateError(.invalidArgument) { try value(#"{"stringValue":1}"#) }
    }

    func testBytes() throws {
        XCTAssertEqual(try value(#"{"bytesValue":"AQID"}"#), .bytes([1, 2, 3]))
        XCTAssertEqual(try value(#"{"bytesValue":"AQI"}"#), .bytes([1, 2]))
        XCTAssertEqual(try value(#"{"bytesValue":"AQI="}"#), .bytes([1, 2]))
        // URL-safe alphabet, unpadded, as some clients send it.
        XCTAssertEqual(try value(#"{"bytesValue":"-_8"}"#), .bytes([0xFB, 0xFF]))
        XCTAssertEqual(try value(#"{"bytesValue":"+/8="}"#), .bytes([0xFB, 0xFF]))
        XCTAssertEqual(try value(#"{"bytesValue":""}"#), .bytes([]))
        XCTAssertEqual(text(Value.bytes([0xFB, 0xFF]).json), #"{"bytesValue":"+/8="}"#)
        try assertRoundTrip(#"{"bytesValue":"AAECAwQ="}"#, #"{"bytesValue":"AAECAwQ="}"#)
        assertFiregateError(.invalidArgument) { try value(#"{"bytesValue":"!!!!"}"#) }
        assertFiregateError(.invalidArgument) { try value(#"{"bytesValue":5}"#) }
    }

    func testReferences() throws {
        try assertRoundTrip(#"{"referenceValue":"projects/p/databases/(default)/documents/c/d"}"#,
                            #"{"referenceValue":"projects/p/databases/(default)/documents/c/d"}"#)
        assertFiregateError(.invalidArgument) { try value(#"{"referenceValue":{}}"#) }
    }

    func testGeoPoints() throws {
        try assertRoundTrip(#"{"geoPointValue":{"latitude":1.5,"longitude":-3}}"#, #"{"geoPointValue":{"latitude":1.5,"longitude":-3}}"#)
        // Proto3 defaults: a missing coordinate is 0.
        XCTAssertEqual(try value(#"{"geoPointValue":{"latitude":10}}"#), .geoPoint(latitude: 10, longitude: 0))
        XCTAssertEqual(try value(#"{"geo_point_value":{}}"#), .geoPoint(latitude: 0, longitude: 0))
        for bad in [#"{"latitude":91}"#, #"{"latitude":-90.5}"#, #"{"longitude":180.1}"#, #"{"latitude":"x"}"#, #"{"latitude":"NaN"}"#, "5"] {
            assertFiregateError(.invalidArgument) { try value(#"{"geoPointValue":\#(bad)}"#) }
        }
        XCTAssertNoThrow(try value(#"{"geoPointValue":{"latitude":-90,"longitude":180}}"#))
    }

    func testArrays() throws {
        try assertRoundTrip(#"{"arrayValue":{}}"#, #"{"arrayValue":{}}"#)
        try assertRoundTrip(#"{"arrayValue":{"values":[]}}"#, #"{"arrayValue":{}}"#)
        try assertRoundTrip(#"{"arrayValue":{"values":[{"integerValue":"1"},{"mapValue":{"fields":{"a":{"arrayValue":{"values":[{"nullValue":null}]}}}}}]}}"#,
                            #"{"arrayValue":{"values":[{"integerValue":"1"},{"mapValue":{"fields":{"a":{"arrayValue":{"values":[{"nullValue":null}]}}}}}]}}"#)
        // A filter value may nest arrays (`in [["a"], ["b"]]`); a stored document may not.
        let nested = try value(#"{"arrayValue":{"values":[{"arrayValue":{}}]}}"#)
        XCTAssertEqual(nested, .array([.array([])]))
        assertFiregateError(.invalidArgument, contains: "array directly inside an array") {
            try Write.validateFieldNames(["a": nested])
        }
        assertFiregateError(.invalidArgument) { try value(#"{"arrayValue":{"values":{}}}"#) }
        assertFiregateError(.invalidArgument) { try value(#"{"arrayValue":[]}"#) }
    }

    func testMaps() throws {
        try assertRoundTrip(#"{"mapValue":{}}"#, #"{"mapValue":{}}"#)
        // Output keys are sorted, whatever the input order.
        try assertRoundTrip(#"{"mapValue":{"fields":{"b":{"integerValue":"2"},"a":{"booleanValue":true}}}}"#,
                            #"{"mapValue":{"fields":{"a":{"booleanValue":true},"b":{"integerValue":"2"}}}}"#)
        assertFiregateError(.invalidArgument) { try value(#"{"mapValue":{"fields":[]}}"#) }
        assertFiregateError(.invalidArgument) { try value(#"{"mapValue":{"fields":{"a":1}}}"#) }
    }

    func testStructuralErrors() {
        for bad in ["{}", "5", #""s""#, "null", #"{"stringValue":"a","integerValue":"1"}"#, #"{"fooValue":1}"#, "[]"] {
            assertFiregateError(.invalidArgument) { try value(bad) }
        }
    }

    func testDeepValuesAreRefused() {
        var text = #"{"nullValue":null}"#
        for _ in 0..<150 { text = #"{"mapValue":{"fields":{"a":\#(text)}}}"# }
        assertFiregateError(.invalidArgument, contains: "nested too deeply") { try value(text) }
    }

    func testFieldsParsing() throws {
        XCTAssertEqual(try Value.parseFields(nil), [:])
        XCTAssertEqual(try Value.parseFields(.null), [:])
        XCTAssertEqual(try Value.parseFields(json(#"{"a":{"integerValue":"1"}}"#)), ["a": .integer(1)])
        assertFiregateError(.invalidArgument) { try Value.parseFields(json("[]")) }
        XCTAssertEqual(text(Value.fieldsJSON(["b": .null, "a": .boolean(true), "B": .integer(1)])),
                       #"{"B":{"integerValue":"1"},"a":{"booleanValue":true},"b":{"nullValue":null}}"#)
    }

    func testBase64Encoding() {
        XCTAssertEqual(Base64.encode([]), "")
        XCTAssertEqual(Base64.encode([0xFF]), "/w==")
        XCTAssertEqual(Base64.decode("/w"), [0xFF])
        XCTAssertNil(Base64.decode("a"))
    }
}
