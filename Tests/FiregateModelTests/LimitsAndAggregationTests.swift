@testable import FiregateModel
import XCTest

final class DocumentLimitsTests: XCTestCase {
    func testValueSizes() {
        XCTAssertEqual(DocumentLimits.size(of: .null), 1)
        XCTAssertEqual(DocumentLimits.size(of: .boolean(true)), 1)
        XCTAssertEqual(DocumentLimits.size(of: .integer(5)), 8)
        XCTAssertEqual(DocumentLimits.size(of: .double(5)), 8)
        XCTAssertEqual(DocumentLimits.size(of: .timestamp(Timestamp(seconds: 0, nanos: 0))), 8)
        XCTAssertEqual(DocumentLimits.size(of: .string("abc")), 4)
        XCTAssertEqual(DocumentLimits.size(of: .string("é")), 3)
        XCTAssertEqual(DocumentLimits.size(of: .bytes([1, 2, 3])), 3)
        XCTAssertEqual(DocumentLimits.size(of: .geoPoint(latitude: 1, longitude: 2)), 16)
        // A reference counts like a document name: segments after the database, each +1, plus 16.
        XCTAssertEqual(DocumentLimits.size(of: .reference(docName("users/jeff"))), 16 + 6 + 5)
        XCTAssertEqual(DocumentLimits.size(of: .array([.integer(1), .string("ab")])), 8 + 3)
        XCTAssertEqual(DocumentLimits.size(of: .map(["ab": .boolean(true), "c": .null])), (3 + 1) + (2 + 1))
    }

    func testDocumentSizeFormula() {
        // The example of the Firestore storage-size documentation: "users/jeff/tasks/my_task_id" is 72 bytes... as a name:
        // users(6) + jeff(5) + tasks(6) + my_task_id(11) + 16 = 44.
        XCTAssertEqual(DocumentLimits.nameSize(rpath("users/jeff/tasks/my_task_id")), 44)
        let fields: [String: Value] = ["type": .string("Personal"), "done": .boolean(false), "priority": .integer(1), "description": .string("Learn Cloud Firestore")]
        // type 5+9, done 5+1, priority 9+8, description 12+22 = 71; + name 44 + 32 = 147 (the documentation's task example).
        XCTAssertEqual(DocumentLimits.documentSize(path: rpath("users/jeff/tasks/my_task_id"), fields: fields), 147)
    }

    func testOneMebibyteBoundary() {
        // name c/d = 16+2+2 = 20; field "s" = 2; string n+1; +32 → n + 55.
        let fits = String(repeating: "x", count: DocumentLimits.maxDocumentBytes - 55)
        XCTAssertNoThrow(try DocumentLimits.validate(path: rpath("c/d"), fields: ["s": .string(fits)], database: testDB))
        assertFiregateError(.invalidArgument, contains: "size (1048577 bytes) exceeds the maximum allowed size of 1,048,576 bytes") {
            try DocumentLimits.validate(path: rpath("c/d"), fields: ["s": .string(fits + "x")], database: testDB)
        }
    }

    func nestedMaps(_ depth: Int) -> Value {
        var value = Value.integer(1)
        for _ in 0..<depth { value = .map(["m": value]) }
        return value
    }

    func testDepthLimit() {
        XCTAssertNoThrow(try DocumentLimits.validate(path: rpath("c/d"), fields: ["f": nestedMaps(20)], database: testDB))
        assertFiregateError(.invalidArgument, contains: "nested more than 20") {
            try DocumentLimits.validate(path: rpath("c/d"), fields: ["f": nestedMaps(21)], database: testDB)
        }
        // Arrays count as a level too.
        var mixed = nestedMaps(19)
        mixed = .array([mixed])
        XCTAssertNoThrow(try DocumentLimits.validate(path: rpath("c/d"), fields: ["f": mixed], database: testDB))
        assertFiregateError(.invalidArgument) {
            try DocumentLimits.validate(path: rpath("c/d"), fields: ["f": .map(["x": mixed])], database: testDB)
        }
    }
}

final class AggregationTests: XCTestCase {
    func docs(_ values: [Value?]) -> [Document] {
        values.enumerated().map { i, v in makeDoc("c/\(i)", v.map { ["n": $0] } ?? [:]) }
    }

    func compute(_ kind: Aggregation.Kind, _ values: [Value?]) -> Value {
        Aggregation(alias: "x", kind: kind).compute(over: docs(values), database: testDB)
    }

    func testCount() {
        XCTAssertEqual(compute(.count(upTo: nil), [nil, .integer(1), .string("x")]), .integer(3))
        XCTAssertEqual(compute(.count(upTo: 2), [nil, .integer(1), .string("x")]), .integer(2))
        XCTAssertEqual(compute(.count(upTo: 5), [nil]), .integer(1))
        XCTAssertEqual(compute(.count(upTo: nil), []), .integer(0))
    }

    func testSum() {
        XCTAssertEqual(compute(.sum(fpath("n")), [.integer(1), .integer(2), nil, .string("9"), .null]), .integer(3))
        XCTAssertEqual(compute(.sum(fpath("n")), [.integer(1), .double(0.5)]), .double(1.5))
        XCTAssertEqual(compute(.sum(fpath("n")), [.double(0.5), .integer(1)]), .double(1.5))
        XCTAssertEqual(compute(.sum(fpath("n")), []), .integer(0))
        XCTAssertEqual(compute(.sum(fpath("n")), [.string("x")]), .integer(0))
        XCTAssertTrue(compute(.sum(fpath("n")), [.integer(1), .double(.nan)]).isNaN)
        // Integer overflow turns the sum into a double rather than wrapping or saturating.
        XCTAssertEqual(compute(.sum(fpath("n")), [.integer(.max), .integer(1)]), .double(9_223_372_036_854_775_808))
        XCTAssertEqual(compute(.sum(fpath("n")), [.integer(.max), .integer(1), .integer(-2)]), .double(9_223_372_036_854_775_806))
        XCTAssertEqual(compute(.sum(fpath("n")), [.integer(.min), .integer(-1)]), .double(-9_223_372_036_854_775_809))
    }

    func testAverage() {
        XCTAssertEqual(compute(.avg(fpath("n")), [.integer(1), .integer(2), .string("x"), nil]), .double(1.5))
        XCTAssertEqual(compute(.avg(fpath("n")), [.integer(4)]), .double(4))
        XCTAssertEqual(compute(.avg(fpath("n")), []), .null)
        XCTAssertEqual(compute(.avg(fpath("n")), [.string("x")]), .null)
        XCTAssertEqual(compute(.avg(fpath("n")), [.integer(.max), .integer(.max)]), .double(9_223_372_036_854_775_807))
    }

    func testParseList() throws {
        let list = try Aggregation.parseList(json("""
            [{"count":{}},{"alias":"total","sum":{"field":{"fieldPath":"n"}}},{"avg":{"field":{"field_path":"m.x"}}},{"count":{"upTo":"5"}}]
            """))
        XCTAssertEqual(list, [
            Aggregation(alias: "field_1", kind: .count(upTo: nil)), Aggregation(alias: "total", kind: .sum(fpath("n"))),
            // Default aliases count the unaliased aggregations only (the proto's own example).
            Aggregation(alias: "field_2", kind: .avg(fpath("m.x"))), Aggregation(alias: "field_3", kind: .count(upTo: 5)),
        ])
        // The messages the client libraries' suites check for (docs/wire/grpc.md, Errors).
        assertFiregateError(.invalidArgument, contains: "Aggregations can not be empty") { try Aggregation.parseList(nil) }
        assertFiregateError(.invalidArgument, contains: "Aggregations can not be empty") { try Aggregation.parseList(json("[]")) }
        assertFiregateError(.invalidArgument, contains: "maximum number of aggregations") { try Aggregation.parseList(json(#"[{"count":{}},{"count":{}},{"count":{}},{"count":{}},{"count":{}},{"count":{}}]"#)) }
        assertFiregateError(.invalidArgument, contains: "Aggregation aliases contain duplicate alias") { try Aggregation.parseList(json(#"[{"alias":"a","count":{}},{"alias":"a","count":{}}]"#)) }
        assertFiregateError(.invalidArgument, contains: "upTo") { try Aggregation.parseList(json(#"[{"count":{"upTo":0}}]"#)) }
        assertFiregateError(.invalidArgument, contains: "one of count") { try Aggregation.parseList(json(#"[{"alias":"a"}]"#)) }
        assertFiregateError(.invalidArgument, contains: "fieldPath") { try Aggregation.parseList(json(#"[{"sum":{}}]"#)) }
    }
}
