import FiregateModel
@testable import FiregateRules
import XCTest

/// `list` rules judge a query by what its filters prove, never document by document (A11).
final class FirestoreRulesQueryTests: XCTestCase {
    let rules = try! FirestoreRulesLoader.load("""
    rules_version = '2';
    service cloud.firestore {
      match /databases/{db}/documents {
        match /stories/{id} { allow list: if resource.data.author == request.auth.uid; }
        match /scores/{id} { allow list: if resource.data.x > 5; }
        match /pages/{id} { allow list: if request.query.limit <= 10; }
        match /tags/{id} { allow list: if resource.data.meta.kind in ['a', 'b'] && resource.data.x is int; }
      }
    }
    """).ruleset!

    func decide(_ collection: String, _ filter: Query.Filter?, limit: Int? = nil, uid: String = "alice") throws -> FirestoreRulesDecision {
        let query = try FirestoreRulesQuery(Query(collectionID: collection, filter: filter, limit: limit))
        let request = FirestoreRulesRequest(method: .list, path: ["databases", "(default)", "documents", collection],
                                            auth: .map(["uid": .string(uid), "token": .map([:])]), time: .timestamp(seconds: 1, nanos: 0))
        return rules.decideList(request, query: query, reader: nil)
    }

    func field(_ name: String) -> FieldPath { FieldPath(name.split(separator: ".").map(String.init)) }

    func testAQueryMustProveTheRuleForEveryDocumentItCouldReturn() throws {
        XCTAssertTrue(try decide("stories", .field(field("author"), .equal, .string("alice"))).allowed)
        let unfiltered = try decide("stories", nil)
        XCTAssertFalse(unfiltered.allowed)
        XCTAssertEqual(unfiltered.message, "\nProperty author is undefined on object. for 'list' @ L4")
        XCTAssertFalse(try decide("stories", .field(field("author"), .in, .array([.string("alice"), .string("bob")]))).allowed)
        XCTAssertFalse(try decide("stories", .field(field("author"), .equal, .string("bob"))).allowed)
    }

    func testRangesProveComparisonsOnlyWhenTheirBoundsDo() throws {
        func x(_ op: Query.FieldOperator, _ value: Value) throws -> Bool { try decide("scores", .field(field("x"), op, value)).allowed }
        XCTAssertTrue(try x(.greaterThan, .integer(6)))
        XCTAssertTrue(try x(.greaterThan, .integer(5)))
        XCTAssertFalse(try x(.greaterThanOrEqual, .integer(5)))
        XCTAssertTrue(try x(.greaterThanOrEqual, .double(5.5)))
        XCTAssertFalse(try x(.lessThan, .integer(100)))
        XCTAssertTrue(try x(.equal, .integer(6)))
        XCTAssertTrue(try x(.in, .array([.integer(6), .integer(42), .integer(99)])))
        XCTAssertFalse(try x(.in, .array([.integer(1), .integer(6)])))
        // Two ranges on one field combine: x > 2 AND x > 7 proves x > 5.
        XCTAssertTrue(try decide("scores", .composite(.and, [.field(field("x"), .greaterThan, .integer(2)),
                                                              .field(field("x"), .greaterThan, .integer(7))])).allowed)
        XCTAssertFalse(try decide("scores", .composite(.or, [.field(field("x"), .equal, .integer(9)),
                                                              .field(field("x"), .equal, .integer(3))])).allowed)
    }

    func testTheQueryClausesAreRequestQuery() throws {
        XCTAssertTrue(try decide("pages", nil, limit: 10).allowed)
        XCTAssertFalse(try decide("pages", nil, limit: 11).allowed)
        XCTAssertFalse(try decide("pages", nil).allowed)  // no limit: null <= 10 is an error
    }

    func testNestedFieldsAndDisjunctsOfOr() throws {
        let kind = field("meta.kind"), x = field("x")
        let either = Query.Filter.composite(.or, [
            .composite(.and, [.field(kind, .equal, .string("a")), .field(x, .equal, .integer(1))]),
            .composite(.and, [.field(kind, .equal, .string("b")), .field(x, .greaterThan, .integer(3))]),
        ])
        XCTAssertTrue(try decide("tags", either).allowed)
        let other = Query.Filter.composite(.and, [.field(kind, .in, .array([.string("a"), .string("c")])), .field(x, .equal, .integer(1))])
        XCTAssertFalse(try decide("tags", other).allowed)
    }
}
