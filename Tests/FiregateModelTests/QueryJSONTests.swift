@testable import FiregateModel
import XCTest

final class QueryJSONTests: XCTestCase {
    func parse(_ text: String, parent: ResourcePath = ResourcePath([])) throws -> Query {
        try Query(structuredQuery: json(text), parent: parent, database: testDB)
    }

    func fieldFilter(_ field: String, _ op: String, _ value: String) -> String {
        #"{"fieldFilter":{"field":{"fieldPath":"\#(field)"},"op":\#(op),"value":\#(value)}}"#
    }

    func testFullQuery() throws {
        let query = try parse("""
            {"from":[{"collectionId":"cities","allDescendants":true}],
             "where":{"compositeFilter":{"op":"AND","filters":[
               {"fieldFilter":{"field":{"fieldPath":"pop"},"op":"GREATER_THAN","value":{"integerValue":"1000"}}},
               {"unaryFilter":{"op":"IS_NOT_NULL","field":{"fieldPath":"name"}}}]}},
             "orderBy":[{"field":{"fieldPath":"pop"},"direction":"DESCENDING"}],
             "startAt":{"values":[{"integerValue":"5000"}],"before":true},
             "endAt":{"values":[{"integerValue":"10"}]},
             "offset":2,"limit":10,"select":{"fields":[{"fieldPath":"name"},{"fieldPath":"a.`b c`"}]}}
            """, parent: rpath("countries/fr"))
        XCTAssertEqual(query.parent, rpath("countries/fr"))
        XCTAssertEqual(query.collectionID, "cities")
        XCTAssertTrue(query.allDescendants)
        XCTAssertEqual(query.filter, .composite(.and, [
            .field(fpath("pop"), .greaterThan, .integer(1000)), .unary(fpath("name"), .isNotNull),
        ]))
        XCTAssertEqual(query.explicitOrderBy, [.init(field: fpath("pop"), descending: true)])
        XCTAssertEqual(query.startAt, .init(values: [.integer(5000)], before: true))
        XCTAssertEqual(query.endAt, .init(values: [.integer(10)], before: false))
        XCTAssertEqual(query.offset, 2)
        XCTAssertEqual(query.limit, 10)
        XCTAssertEqual(query.projection, [fpath("name"), FieldPath(["a", "b c"])])
        XCTAssertFalse(query.limitToLast)
    }

    func testEnumsByNumberAndSnakeCase() throws {
        let query = try parse("""
            {"from":[{"collection_id":"c","all_descendants":false}],
             "where":{"composite_filter":{"op":2,"filters":[
               {"field_filter":{"field":{"field_path":"a"},"op":5,"value":{"integer_value":"1"}}},
               {"fieldFilter":{"field":{"fieldPath":"b"},"op":"9","value":{"arrayValue":{"values":[{"stringValue":"x"}]}}}},
               {"unary_filter":{"op":3,"field":{"field_path":"c"}}}]}},
             "order_by":[{"field":{"field_path":"a"},"direction":2}],
             "start_at":{"values":[{"integerValue":"1"}],"before":false},
             "limit":{"value":3}}
            """)
        XCTAssertEqual(query.collectionID, "c")
        XCTAssertEqual(query.filter, .composite(.or, [
            .field(fpath("a"), .equal, .integer(1)), .field(fpath("b"), .arrayContainsAny, .array([.string("x")])), .unary(fpath("c"), .isNull),
        ]))
        XCTAssertEqual(query.explicitOrderBy, [.init(field: fpath("a"), descending: true)])
        XCTAssertEqual(query.startAt?.before, false)
        XCTAssertEqual(query.limit, 3)
    }

    func testEveryOperatorName() throws {
        for op in Query.FieldOperator.allCases {
            let value = [.in, .notIn, .arrayContainsAny].contains(op) ? #"{"arrayValue":{"values":[{"integerValue":"1"}]}}"# : #"{"integerValue":"1"}"#
            let byName = try parse(#"{"from":[{"collectionId":"c"}],"where":\#(fieldFilter("a", "\"\(op.rawValue)\"", value))}"#)
            let byNumber = try parse(#"{"from":[{"collectionId":"c"}],"where":\#(fieldFilter("a", "\(op.number)", value))}"#)
            XCTAssertEqual(byName.filter, byNumber.filter)
            guard case .field(_, let parsed, _)? = byName.filter else { return XCTFail("not a field filter") }
            XCTAssertEqual(parsed, op)
        }
        for op in Query.UnaryOperator.allCases {
            let query = try parse(#"{"from":[{"collectionId":"c"}],"where":{"unaryFilter":{"op":\#(op.number),"field":{"fieldPath":"a"}}}}"#)
            XCTAssertEqual(query.filter, .unary(fpath("a"), op))
        }
    }

    func testDefaults() throws {
        let query = try parse(#"{"from":[{"collectionId":"c"}]}"#)
        XCTAssertNil(query.filter)
        XCTAssertNil(query.limit)
        XCTAssertEqual(query.offset, 0)
        XCTAssertNil(query.projection)
        XCTAssertEqual(query.explicitOrderBy, [])
        let withNulls = try parse(#"{"from":[{"collectionId":"c"}],"where":null,"orderBy":null,"limit":null,"offset":null}"#)
        XCTAssertEqual(withNulls, query)
    }

    func assertInvalid(_ text: String, contains: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
        assertFiregateError(.invalidArgument, contains: contains, file: file, line: line) { try parse(text) }
    }

    func testStructuralErrors() {
        assertInvalid("[]")
        assertInvalid("{}", contains: "exactly one collection")
        assertInvalid(#"{"from":[]}"#)
        assertInvalid(#"{"from":[{"collectionId":"a"},{"collectionId":"b"}]}"#)
        assertInvalid(#"{"from":[{}]}"#, contains: "collectionId")
        assertInvalid(#"{"from":[{"collectionId":""}]}"#)
        assertInvalid(#"{"from":[{"collectionId":"a/b"}]}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"where":{}}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"where":{"compositeFilter":{"op":"AND","filters":[]}}}"#, contains: "at least one")
        assertInvalid(#"{"from":[{"collectionId":"c"}],"where":{"compositeFilter":{"op":"XOR","filters":[]}}}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"where":\#(fieldFilter("a", "\"LIKE\"", #"{"integerValue":"1"}"#))}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"where":\#(fieldFilter("a", "11", #"{"integerValue":"1"}"#))}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"where":{"fieldFilter":{"field":{"fieldPath":"a"},"op":"EQUAL"}}}"#, contains: "value")
        assertInvalid(#"{"from":[{"collectionId":"c"}],"where":\#(fieldFilter("a..b", "\"EQUAL\"", #"{"integerValue":"1"}"#))}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"where":\#(fieldFilter("a", "\"EQUAL\"", #"{"integerValue":"x"}"#))}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"where":{"unaryFilter":{"op":"IS_EMPTY","field":{"fieldPath":"a"}}}}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"orderBy":{}}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"orderBy":[{"field":{"fieldPath":"a"},"direction":"UP"}]}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"orderBy":[{"direction":"ASCENDING"}]}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"limit":-1}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"limit":"x"}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"limit":2147483648}"#)
        assertInvalid(#"{"from":[{"collectionId":"c"}],"offset":-3}"#)
    }

    func testFilterRules() {
        let from = #""from":[{"collectionId":"c"}]"#
        let list = { (n: Int) in #"{"arrayValue":{"values":[\#((0..<n).map { #"{"integerValue":"\#($0)"}"# }.joined(separator: ","))]}}"# }
        assertInvalid(#"{\#(from),"where":\#(fieldFilter("a", "\"IN\"", list(0)))}"#, contains: "non-empty array")
        assertInvalid(#"{\#(from),"where":\#(fieldFilter("a", "\"IN\"", #"{"integerValue":"1"}"#))}"#, contains: "non-empty array")
        assertInvalid(#"{\#(from),"where":\#(fieldFilter("a", "\"ARRAY_CONTAINS_ANY\"", list(0)))}"#)
        assertInvalid(#"{\#(from),"where":\#(fieldFilter("a", "\"NOT_IN\"", list(11)))}"#, contains: "at most 10")
        XCTAssertNoThrow(try parse(#"{\#(from),"where":\#(fieldFilter("a", "\"NOT_IN\"", list(10)))}"#))
        assertInvalid(#"{\#(from),"where":\#(fieldFilter("a", "\"IN\"", list(31)))}"#, contains: "30")
        XCTAssertNoThrow(try parse(#"{\#(from),"where":\#(fieldFilter("a", "\"IN\"", list(30)))}"#))
        let two = { (a: String, b: String) in #"{\#(from),"where":{"compositeFilter":{"op":"AND","filters":[\#(a),\#(b)]}}}"# }
        let notEqual = fieldFilter("a", "\"NOT_EQUAL\"", #"{"integerValue":"1"}"#)
        let notIn = fieldFilter("b", "\"NOT_IN\"", list(2))
        let isNotNull = #"{"unaryFilter":{"op":"IS_NOT_NULL","field":{"fieldPath":"c"}}}"#
        let inFilter = fieldFilter("d", "\"IN\"", list(2))
        let contains = fieldFilter("e", "\"ARRAY_CONTAINS\"", #"{"integerValue":"1"}"#)
        assertInvalid(two(notEqual, notIn), contains: "Only a single 'NOT_EQUAL'")
        assertInvalid(two(notEqual, isNotNull), contains: "Only a single 'NOT_EQUAL'")
        assertInvalid(two(notIn, inFilter), contains: "NOT_IN cannot be combined")
        assertInvalid(two(contains, contains), contains: "A maximum of 1 'ARRAY_CONTAINS' filter is allowed per disjunction.")
        let containsAny = fieldFilter("f", "\"ARRAY_CONTAINS_ANY\"", list(2))
        assertInvalid(two(contains, containsAny), contains: "per disjunction")
        // One per conjunction of the disjunctive normal form: each side of an OR may have one.
        XCTAssertNoThrow(try parse(#"{\#(from),"where":{"compositeFilter":{"op":"OR","filters":[\#(contains),\#(containsAny)]}}}"#))
        // A key equality beside another field's inequality, or an order with a field after the key.
        let key = fieldFilter("__name__", "\"EQUAL\"", #"{"referenceValue":"\#(docName("c/a"))"}"#)
        assertInvalid(two(notEqual, key), contains: "Equality on key is not allowed")
        assertInvalid(#"{\#(from),"where":\#(notEqual),"orderBy":[{"field":{"fieldPath":"__name__"}}]}"#, contains: "more fields after the key")
        // A range on null or NaN matches nothing and is no inequality.
        let nanRange = fieldFilter("a", "\"LESS_THAN\"", #"{"doubleValue":"NaN"}"#)
        XCTAssertNoThrow(try parse(#"{\#(from),"where":\#(nanRange),"orderBy":[{"field":{"fieldPath":"__name__"}}]}"#))
        assertInvalid(#"{\#(from),"where":{"compositeFilter":{"op":"OR","filters":[\#(notIn),\#(contains)]}}}"#, contains: "NOT_IN cannot be combined")
        XCTAssertNoThrow(try parse(two(notEqual, inFilter)))
        XCTAssertNoThrow(try parse(two(inFilter, contains)))
    }

    func testDocumentIDFilters() {
        let from = #""from":[{"collectionId":"c"}]"#
        XCTAssertNoThrow(try parse(#"{\#(from),"where":\#(fieldFilter("__name__", "\"GREATER_THAN\"", #"{"referenceValue":"\#(docName("c/a"))"}"#))}"#))
        XCTAssertNoThrow(try parse(#"{\#(from),"where":\#(fieldFilter("__name__", "\"IN\"", #"{"arrayValue":{"values":[{"referenceValue":"\#(docName("c/a"))"}]}}"#))}"#))
        assertInvalid(#"{\#(from),"where":\#(fieldFilter("__name__", "\"EQUAL\"", #"{"stringValue":"a"}"#))}"#, contains: "__key__")
        assertInvalid(#"{\#(from),"where":\#(fieldFilter("__name__", "\"EQUAL\"", #"{"referenceValue":"projects/x/databases/(default)/documents/c/a"}"#))}"#)
        assertInvalid(#"{\#(from),"where":\#(fieldFilter("__name__", "\"IN\"", #"{"arrayValue":{"values":[{"integerValue":"1"}]}}"#))}"#)
        assertInvalid(#"{\#(from),"where":\#(fieldFilter("__name__", "\"ARRAY_CONTAINS\"", #"{"referenceValue":"\#(docName("c/a"))"}"#))}"#)
        assertInvalid(#"{\#(from),"where":{"unaryFilter":{"op":"IS_NULL","field":{"fieldPath":"__name__"}}}}"#, contains: "__name__")
    }

    func testCursorRules() {
        let from = #""from":[{"collectionId":"c"}]"#
        let orderA = #""orderBy":[{"field":{"fieldPath":"a"}}]"#
        XCTAssertNoThrow(try parse(#"{\#(from),\#(orderA),"startAt":{"values":[{"integerValue":"1"},{"referenceValue":"\#(docName("c/x"))"}]}}"#))
        assertInvalid(#"{\#(from),\#(orderA),"startAt":{"values":[{"integerValue":"1"},{"referenceValue":"\#(docName("c/x"))"},{"integerValue":"1"}]}}"#,
                      contains: "Too many cursor values")
        assertInvalid(#"{\#(from),\#(orderA),"endAt":{"values":[{"integerValue":"1"},{"stringValue":"x"}]}}"#, contains: "referenceValue")
        assertInvalid(#"{\#(from),"startAt":{"values":[{"referenceValue":"\#(docName("other/x"))"}]}}"#, contains: "not in the queried collection")
        assertInvalid(#"{\#(from),"startAt":{"values":[{"referenceValue":"projects/x/databases/(default)/documents/c/x"}]}}"#)
        // A collection-group cursor may point into any collection of the group.
        XCTAssertNoThrow(try parse(#"{"from":[{"collectionId":"c","allDescendants":true}],"startAt":{"values":[{"referenceValue":"\#(docName("a/1/c/x"))"}]}}"#))
        assertInvalid(#"{\#(from),"startAt":{"values":[{"integerValue":"x"}]}}"#)
    }
}
