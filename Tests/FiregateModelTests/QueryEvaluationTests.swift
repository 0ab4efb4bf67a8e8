@testable import FiregateModel
import XCTest

final class QueryEvaluationTests: XCTestCase {
    typealias F = Query.Filter

    /// Documents `c/<id>` with field `a` set to each value (and one without `a`).
    let values: [(String, Value?)] = [
        ("missing", nil), ("null", .null), ("false", .boolean(false)), ("true", .boolean(true)), ("nan", .double(.nan)),
        ("negInf", .double(-.infinity)), ("i1", .integer(1)), ("d1", .double(1)), ("d2_5", .double(2.5)), ("i3", .integer(3)),
        ("ts", .timestamp(Timestamp(seconds: 1, nanos: 0))), ("s1", .string("1")), ("sa", .string("a")), ("sb", .string("b")),
        ("bytes", .bytes([1])), ("ref", .reference(docName("c/x"))), ("geo", .geoPoint(latitude: 1, longitude: 1)),
        ("arr1", .array([.integer(1), .string("x")])), ("arrD1", .array([.double(1)])), ("arrNested", .array([.map(["v": .integer(1)])])),
        ("arrEmpty", .array([])), ("map", .map(["v": .integer(1)])),
    ]

    var documents: [Document] {
        values.map { id, value in makeDoc("c/\(id)", value.map { ["a": $0] } ?? ["other": .integer(0)]) }
    }

    /// The SDK's matcher (`locally`, an edge client's view) unless told the backend's.
    func ids(_ query: Query, over docs: [Document]? = nil, locally: Bool = true) -> [String] {
        query.run(over: docs ?? documents, database: testDB, locally: locally).documents.map(\.path.lastSegment)
    }

    func ids(where filter: F, locally: Bool = true) -> Set<String> { Set(ids(Query(collectionID: "c", filter: filter), locally: locally)) }

    /// The backend: a null or NaN operand matches nothing (docs/documents.md).
    func testTheBackendMatchesNothingWithNullOrNaNOperands() {
        XCTAssertEqual(ids(where: .field(fpath("a"), .equal, .null), locally: false), [])
        XCTAssertEqual(ids(where: .field(fpath("a"), .equal, .double(.nan)), locally: false), [])
        XCTAssertEqual(ids(where: .field(fpath("a"), .in, .array([.double(3), .string("b"), .null])), locally: false), ["i3", "sb"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .notEqual, .null), locally: false), [])
        XCTAssertEqual(ids(where: .field(fpath("a"), .notEqual, .double(.nan)), locally: false),
                       Set(values.map(\.0)).subtracting(["missing", "null"]))
        XCTAssertEqual(ids(where: .field(fpath("a"), .equal, .integer(1)), locally: false), ["i1", "d1"])
    }

    func testEqualMatchesAcrossIntAndDouble() {
        XCTAssertEqual(ids(where: .field(fpath("a"), .equal, .integer(1))), ["i1", "d1"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .equal, .string("a"))), ["sa"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .equal, .null)), ["null"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .equal, .array([.double(1)]))), ["arrD1"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .equal, .map(["v": .double(1)]))), ["map"])
    }

    func testRangeFiltersStayWithinTheirTypeClass() {
        XCTAssertEqual(ids(where: .field(fpath("a"), .lessThan, .integer(3))), ["negInf", "i1", "d1", "d2_5"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .lessThanOrEqual, .integer(3))), ["negInf", "i1", "d1", "d2_5", "i3"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .greaterThan, .double(1))), ["d2_5", "i3"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .greaterThanOrEqual, .integer(1))), ["i1", "d1", "d2_5", "i3"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .greaterThan, .string(""))), ["s1", "sa", "sb"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .lessThan, .string("b"))), ["s1", "sa"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .greaterThanOrEqual, .boolean(false))), ["false", "true"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .greaterThan, .timestamp(Timestamp(seconds: 0, nanos: 0)))), ["ts"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .greaterThanOrEqual, .array([]))), ["arr1", "arrD1", "arrNested", "arrEmpty"])
        // NaN takes part in no range comparison, neither as value nor as operand.
        XCTAssertEqual(ids(where: .field(fpath("a"), .greaterThan, .double(.nan))), [])
        XCTAssertEqual(ids(where: .field(fpath("a"), .lessThanOrEqual, .double(.infinity))), ["negInf", "i1", "d1", "d2_5", "i3"])
    }

    func testNotEqualSkipsMissingAndNull() {
        let result = ids(where: .field(fpath("a"), .notEqual, .integer(1)))
        XCTAssertEqual(result, Set(values.map(\.0)).subtracting(["missing", "null", "i1", "d1"]))
        XCTAssertTrue(ids(where: .field(fpath("a"), .notEqual, .null)).isSuperset(of: ["false", "nan", "sa"]))
        XCTAssertFalse(ids(where: .field(fpath("a"), .notEqual, .null)).contains("null"))
    }

    func testNotInSkipsMissingAndNull() {
        let result = ids(where: .field(fpath("a"), .notIn, .array([.integer(1), .string("a")])))
        XCTAssertEqual(result, Set(values.map(\.0)).subtracting(["missing", "null", "i1", "d1", "sa"]))
        // A null in the list excludes everything (the SDK's rule).
        XCTAssertEqual(ids(where: .field(fpath("a"), .notIn, .array([.integer(1), .null]))), [])
    }

    func testIn() {
        XCTAssertEqual(ids(where: .field(fpath("a"), .in, .array([.double(3), .string("b"), .null]))), ["i3", "sb", "null"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .in, .array([.double(.nan)]))), ["nan"])
    }

    func testArrayContains() {
        XCTAssertEqual(ids(where: .field(fpath("a"), .arrayContains, .double(1))), ["arr1", "arrD1"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .arrayContains, .map(["v": .integer(1)]))), ["arrNested"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .arrayContains, .string("1"))), [])
    }

    func testArrayContainsAny() {
        XCTAssertEqual(ids(where: .field(fpath("a"), .arrayContainsAny, .array([.string("x"), .integer(9)]))), ["arr1"])
        XCTAssertEqual(ids(where: .field(fpath("a"), .arrayContainsAny, .array([.integer(1)]))), ["arr1", "arrD1"])
    }

    func testUnaryFilters() {
        XCTAssertEqual(ids(where: .unary(fpath("a"), .isNaN)), ["nan"])
        XCTAssertEqual(ids(where: .unary(fpath("a"), .isNull)), ["null"])
        XCTAssertEqual(ids(where: .unary(fpath("a"), .isNotNull)), Set(values.map(\.0)).subtracting(["missing", "null"]))
        XCTAssertEqual(ids(where: .unary(fpath("a"), .isNotNaN)), Set(values.map(\.0)).subtracting(["missing", "null", "nan"]))
    }

    func testNestedFieldsAndComposites() {
        let docs = [
            makeDoc("c/1", ["m": .map(["x": .integer(1), "y": .string("a")])]),
            makeDoc("c/2", ["m": .map(["x": .integer(2), "y": .string("b")])]),
            makeDoc("c/3", ["m": .map(["x": .integer(3)]), "z": .boolean(true)]),
            makeDoc("c/4", ["m": .integer(5)]),
        ]
        func run(_ filter: F) -> [String] { ids(Query(collectionID: "c", filter: filter), over: docs) }
        XCTAssertEqual(run(.field(fpath("m.x"), .greaterThan, .integer(1))), ["2", "3"])
        XCTAssertEqual(run(.composite(.and, [.field(fpath("m.x"), .greaterThan, .integer(1)), .field(fpath("m.y"), .equal, .string("b"))])), ["2"])
        XCTAssertEqual(run(.composite(.or, [.field(fpath("m.y"), .equal, .string("a")), .field(fpath("z"), .equal, .boolean(true))])), ["1", "3"])
        XCTAssertEqual(run(.composite(.or, [
            .composite(.and, [.field(fpath("m.x"), .equal, .integer(1)), .field(fpath("m.y"), .equal, .string("a"))]),
            .field(fpath("m"), .equal, .integer(5)),
        ])), ["1", "4"])
    }

    func testOrWithInequalityRequiresTheImplicitlyOrderedField() {
        // `a > 1 || b == 1` is ordered by `a`, so a document without `a` cannot be in the result
        // (JS SDK queryMatchesOrderBy uses the normalized order, implicit fields included).
        let docs = [makeDoc("c/hasA", ["a": .integer(5)]), makeDoc("c/onlyB", ["b": .integer(1)]), makeDoc("c/both", ["a": .integer(0), "b": .integer(1)])]
        let query = Query(collectionID: "c", filter: .composite(.or, [.field(fpath("a"), .greaterThan, .integer(1)), .field(fpath("b"), .equal, .integer(1))]))
        XCTAssertEqual(ids(query, over: docs), ["both", "hasA"])
    }

    func testExplicitOrderByExcludesDocumentsMissingTheField() {
        let docs = [makeDoc("c/x", ["a": .integer(2)]), makeDoc("c/y", [:]), makeDoc("c/z", ["a": .null])]
        XCTAssertEqual(ids(Query(collectionID: "c", orderBy: [.init(field: fpath("a"))]), over: docs), ["z", "x"])
        XCTAssertEqual(ids(Query(collectionID: "c"), over: docs), ["x", "y", "z"])
    }

    func testImplicitOrderBy() {
        let a = fpath("a"), b = fpath("b")
        XCTAssertEqual(Query(collectionID: "c").orderBy, [.init(field: .documentID)])
        XCTAssertEqual(Query(collectionID: "c", filter: .field(b, .greaterThan, .integer(1))).orderBy,
                       [.init(field: b), .init(field: .documentID)])
        XCTAssertEqual(Query(collectionID: "c", orderBy: [.init(field: a, descending: true)]).orderBy,
                       [.init(field: a, descending: true), .init(field: .documentID, descending: true)])
        // Inequality fields in field-name order, each once; equality fields are not ordered.
        let multi = Query(collectionID: "c", filter: .composite(.and, [
            .field(b, .lessThan, .integer(9)), .field(a, .notEqual, .integer(1)), .field(b, .greaterThan, .integer(0)),
            .field(fpath("e"), .equal, .integer(1)),
        ]))
        XCTAssertEqual(multi.orderBy, [.init(field: a), .init(field: b), .init(field: .documentID)])
        // StructuredQuery.order_by: appended fields take the direction of the last explicit order.
        let desc = Query(collectionID: "c", filter: .field(b, .greaterThan, .integer(1)), orderBy: [.init(field: a, descending: true)])
        XCTAssertEqual(desc.orderBy, [.init(field: a, descending: true), .init(field: b, descending: true), .init(field: .documentID, descending: true)])
        // An inequality on __name__ does not put __name__ first: `WHERE __name__ > x AND a > 1` orders by a, __name__.
        let key = Query(collectionID: "c", filter: .composite(.and, [
            .field(.documentID, .greaterThan, .reference(docName("c/x"))), .field(a, .greaterThan, .integer(1)),
        ]))
        XCTAssertEqual(key.orderBy, [.init(field: a), .init(field: .documentID)])
        // An explicitly ordered inequality field is not repeated.
        let explicit = Query(collectionID: "c", filter: .field(b, .greaterThan, .integer(1)), orderBy: [.init(field: b, descending: true)])
        XCTAssertEqual(explicit.orderBy, [.init(field: b, descending: true), .init(field: .documentID, descending: true)])
    }

    func testOrderingUsesFullOrderWithNameTieBreak() {
        let docs = [
            makeDoc("c/d", ["a": .integer(1)]), makeDoc("c/b", ["a": .double(1)]), makeDoc("c/a", ["a": .string("x")]),
            makeDoc("c/c", ["a": .integer(0)]), makeDoc("c/e", ["a": .null]),
        ]
        XCTAssertEqual(ids(Query(collectionID: "c", orderBy: [.init(field: fpath("a"))]), over: docs), ["e", "c", "b", "d", "a"])
        XCTAssertEqual(ids(Query(collectionID: "c", orderBy: [.init(field: fpath("a"), descending: true)]), over: docs), ["a", "d", "b", "c", "e"])
        XCTAssertEqual(ids(Query(collectionID: "c", orderBy: [.init(field: .documentID, descending: true)]), over: docs), ["e", "d", "c", "b", "a"])
    }

    // MARK: Cursors

    var numbered: [Document] { (1...5).map { makeDoc("c/d\($0)", ["a": .integer(Int64($0)), "b": .integer(Int64($0 % 2))]) } }

    func cursorIDs(orderBy: [Query.Ordering], start: Query.Bound? = nil, end: Query.Bound? = nil) -> [String] {
        ids(Query(collectionID: "c", orderBy: orderBy, startAt: start, endAt: end), over: numbered)
    }

    func testStartAndEndCursors() {
        let byA = [Query.Ordering(field: fpath("a"))]
        XCTAssertEqual(cursorIDs(orderBy: byA, start: .init(values: [.integer(3)], before: true)), ["d3", "d4", "d5"])  // startAt
        XCTAssertEqual(cursorIDs(orderBy: byA, start: .init(values: [.integer(3)], before: false)), ["d4", "d5"])  // startAfter
        XCTAssertEqual(cursorIDs(orderBy: byA, end: .init(values: [.integer(3)], before: false)), ["d1", "d2", "d3"])  // endAt
        XCTAssertEqual(cursorIDs(orderBy: byA, end: .init(values: [.integer(3)], before: true)), ["d1", "d2"])  // endBefore
        XCTAssertEqual(cursorIDs(orderBy: byA, start: .init(values: [.double(1.5)], before: true), end: .init(values: [.double(4)], before: true)),
                       ["d2", "d3"])
        let desc = [Query.Ordering(field: fpath("a"), descending: true)]
        XCTAssertEqual(cursorIDs(orderBy: desc, start: .init(values: [.integer(3)], before: true)), ["d3", "d2", "d1"])
        XCTAssertEqual(cursorIDs(orderBy: desc, start: .init(values: [.integer(3)], before: false)), ["d2", "d1"])
        XCTAssertEqual(cursorIDs(orderBy: desc, end: .init(values: [.integer(4)], before: false)), ["d5", "d4"])
    }

    func testPartialCursorsCoverEveryTie() {
        let byBThenA = [Query.Ordering(field: fpath("b")), Query.Ordering(field: fpath("a"))]
        // b values: d1=1, d2=0, d3=1, d4=0, d5=1 → order d2, d4, d1, d3, d5.
        XCTAssertEqual(cursorIDs(orderBy: byBThenA), ["d2", "d4", "d1", "d3", "d5"])
        XCTAssertEqual(cursorIDs(orderBy: byBThenA, start: .init(values: [.integer(1)], before: true)), ["d1", "d3", "d5"])
        XCTAssertEqual(cursorIDs(orderBy: byBThenA, start: .init(values: [.integer(0)], before: false)), ["d1", "d3", "d5"])
        XCTAssertEqual(cursorIDs(orderBy: byBThenA, end: .init(values: [.integer(0)], before: false)), ["d2", "d4"])
        XCTAssertEqual(cursorIDs(orderBy: byBThenA, end: .init(values: [.integer(1)], before: true)), ["d2", "d4"])
        XCTAssertEqual(cursorIDs(orderBy: byBThenA, start: .init(values: [.integer(1), .integer(3)], before: false)), ["d5"])
    }

    func testNameCursor() {
        let byB = [Query.Ordering(field: fpath("b"))]
        let after = Query.Bound(values: [.integer(1), .reference(docName("c/d1"))], before: false)
        XCTAssertEqual(cursorIDs(orderBy: byB, start: after), ["d3", "d5"])
        let at = Query.Bound(values: [.integer(1), .reference(docName("c/d3"))], before: true)
        XCTAssertEqual(cursorIDs(orderBy: byB, start: at), ["d3", "d5"])
        let keyOnly = Query.Bound(values: [.reference(docName("c/d3"))], before: true)
        XCTAssertEqual(cursorIDs(orderBy: [], start: keyOnly), ["d3", "d4", "d5"])
        XCTAssertEqual(cursorIDs(orderBy: [], end: Query.Bound(values: [.reference(docName("c/d2"))], before: false)), ["d1", "d2"])
    }

    // MARK: Window

    func testOffsetLimitAndLimitToLast() {
        let byA = [Query.Ordering(field: fpath("a"))]
        var query = Query(collectionID: "c", orderBy: byA, offset: 1, limit: 2)
        var result = query.run(over: numbered, database: testDB)
        XCTAssertEqual(result.documents.map(\.path.lastSegment), ["d2", "d3"])
        XCTAssertEqual(result.skipped, 1)
        query = Query(collectionID: "c", orderBy: byA, offset: 10)
        result = query.run(over: numbered, database: testDB)
        XCTAssertEqual(result.documents, [])
        XCTAssertEqual(result.skipped, 5)
        query = Query(collectionID: "c", orderBy: byA, limit: 0)
        XCTAssertEqual(query.run(over: numbered, database: testDB).documents, [])
        query = Query(collectionID: "c", orderBy: byA, limit: 2, limitToLast: true)
        XCTAssertEqual(ids(query, over: numbered), ["d4", "d5"])
        query = Query(collectionID: "c", orderBy: byA, limit: 9, limitToLast: true)
        XCTAssertEqual(ids(query, over: numbered), ["d1", "d2", "d3", "d4", "d5"])
        // Offset applies after the cursor.
        query = Query(collectionID: "c", orderBy: byA, startAt: .init(values: [.integer(2)], before: false), offset: 1, limit: 1)
        XCTAssertEqual(ids(query, over: numbered), ["d4"])
    }

    // MARK: Collections and groups

    let tree = ["c/x", "a/1/c/y", "a/1/c/y/c/q", "a/2/c/z", "b/1/c/w", "a/1/d/v", "cc/n"]

    func testCollectionAndGroupMembership() {
        let docs = tree.map { makeDoc($0, [:]) }
        func paths(_ query: Query) -> [String] { query.run(over: docs, database: testDB).documents.map(\.path.canonical) }
        XCTAssertEqual(paths(Query(collectionID: "c")), ["c/x"])
        XCTAssertEqual(paths(Query(parent: rpath("a/1"), collectionID: "c")), ["a/1/c/y"])
        XCTAssertEqual(paths(Query(collectionID: "c", allDescendants: true)), ["a/1/c/y", "a/1/c/y/c/q", "a/2/c/z", "b/1/c/w", "c/x"])
        XCTAssertEqual(paths(Query(parent: rpath("a/1"), collectionID: "c", allDescendants: true)), ["a/1/c/y", "a/1/c/y/c/q"])
        XCTAssertEqual(paths(Query(parent: rpath("a/1/c/y"), collectionID: "c", allDescendants: true)), ["a/1/c/y/c/q"])
        XCTAssertEqual(paths(Query(parent: rpath("a/9"), collectionID: "c", allDescendants: true)), [])
        XCTAssertFalse(Query(collectionID: "c").containsPath(rpath("c")))
    }
}
