import XCTest
@testable import FiregateModel

final class TreeQueryTests: XCTestCase {
    func parse(_ parameters: [String: String]) throws -> TreeQuery? { try TreeQueryParser.parse(parameters) }

    func message(_ parameters: [String: String]) -> String? {
        do {
            _ = try parse(parameters)
            return nil
        } catch {
            return (error as? FiregateError)?.message
        }
    }

    func testParsing() throws {
        XCTAssertNil(try parse(["print": "pretty"]))
        XCTAssertEqual(try parse(["orderBy": #""$key""#])?.index, .key)
        XCTAssertEqual(try parse(["orderBy": #""a/b""#])?.index, .child(try TreePath(validating: "a/b")))
        let q = try XCTUnwrap(parse(["orderBy": #""h""#, "startAt": #"3,"k""#, "endBefore": "\"z\"", "limitToLast": "2"]))
        XCTAssertEqual(q.start, TreeQuery.Bound(value: .int(3), key: "k", inclusive: true))
        XCTAssertEqual(q.end, TreeQuery.Bound(value: .string("z"), key: nil, inclusive: false))
        XCTAssertEqual(q.limit, .last(2))
        let equal = try XCTUnwrap(parse(["orderBy": #""h""#, "equalTo": "null"]))
        XCTAssertEqual(equal.start, equal.end)
        XCTAssertEqual(try parse(["orderBy": #""h""#, "startAt": #""a,b""#])?.start?.value, .string("a,b"))
    }

    func testProductionErrors() {
        XCTAssertEqual(message(["limitToFirst": "1"]), "orderBy must be defined when other query parameters are defined")
        XCTAssertEqual(message(["orderBy": "h"]), "orderBy must be a valid JSON encoded path")
        XCTAssertEqual(message(["orderBy": #""$foo""#]), "orderBy must be a valid JSON encoded path")
        XCTAssertEqual(message(["orderBy": #""a.b""#]), "orderBy must be a valid JSON encoded path")
        XCTAssertEqual(message(["orderBy": #""$key""#, "startAt": "1"]), "Provided key index type is invalid, must be string")
        XCTAssertEqual(message(["orderBy": #""h""#, "startAt": "abc"]), "Constraint index field must be a JSON primitive")
        XCTAssertEqual(message(["orderBy": #""h""#, "endAt": #"{"a":1}"#]), "Constraint index field must be a JSON primitive")
        XCTAssertNotNil(message(["orderBy": #""h""#, "limitToFirst": "1", "limitToLast": "1"]))
        XCTAssertNotNil(message(["orderBy": #""h""#, "limitToFirst": "-1"]))
        XCTAssertNotNil(message(["orderBy": #""h""#, "limitToFirst": "1.5"]))
        XCTAssertNotNil(message(["orderBy": #""h""#, "equalTo": "1", "startAt": "1"]))
        XCTAssertNotNil(message(["orderBy": #""$priority""#, "startAt": "true"]))
    }

    func keys(_ query: TreeQuery, _ value: JSON) throws -> [String] {
        guard case .children(let entries) = TreeQueryEvaluator.evaluate(query, on: try node(value)) else { return ["<whole>"] }
        return entries.map(\.key)
    }

    let scores: JSON = ["a": ["s": 3], "b": ["s": 1], "c": ["s": "x"], "d": ["t": 1], "e": ["s": 1], "f": ["s": ["deep": 1]], "g": ["s": false]]

    func testWindowsWithKeyTieBreaks() throws {
        let s = TreeQuery.Index.child(try TreePath(validating: "s"))
        XCTAssertEqual(try keys(TreeQuery(index: s, limit: .first(100)), scores), ["d", "g", "b", "e", "a", "c", "f"])
        XCTAssertEqual(try keys(TreeQuery(index: s, start: .init(value: .int(1)), end: .init(value: .int(1))), scores), ["b", "e"])
        XCTAssertEqual(try keys(TreeQuery(index: s, start: .init(value: .int(1), key: "c")), scores), ["e", "a", "c", "f"])
        XCTAssertEqual(try keys(TreeQuery(index: s, end: .init(value: .int(1), key: "b")), scores), ["d", "g", "b"])
        XCTAssertEqual(try keys(TreeQuery(index: s, start: .init(value: .int(1), inclusive: false)), scores), ["a", "c", "f"])
        XCTAssertEqual(try keys(TreeQuery(index: s, start: .init(value: .int(1), key: "b", inclusive: false)), scores), ["e", "a", "c", "f"])
        XCTAssertEqual(try keys(TreeQuery(index: s, end: .init(value: .int(3), inclusive: false), limit: .last(2)), scores), ["b", "e"])
        XCTAssertEqual(try keys(TreeQuery(index: s, start: .init(value: nil), end: .init(value: nil)), scores), ["d"])
    }

    func testKeyValueAndPriorityIndexes() throws {
        XCTAssertEqual(try keys(TreeQuery(index: .key, start: .init(value: .string("b")), limit: .first(2)), scores), ["b", "c"])
        XCTAssertEqual(try keys(TreeQuery(index: .key, start: .init(value: .string("b"), inclusive: false), end: .init(value: .string("d"))), scores), ["c", "d"])
        XCTAssertEqual(try keys(TreeQuery(index: .value, limit: .first(9)), ["x": 2, "y": "a", "z": true, "w": ["o": 1], "v": 1]), ["z", "v", "x", "y", "w"])
        let prioritised: JSON = ["a": [".value": 1, ".priority": "z"], "b": [".value": 1, ".priority": 1], "c": 1]
        XCTAssertEqual(try keys(TreeQuery(index: .priority, limit: .first(9)), prioritised), ["c", "b", "a"])
        XCTAssertEqual(try keys(TreeQuery(index: .priority, start: .init(value: .int(0))), prioritised), ["b", "a"])
    }

    func testOrderingOnlyAndLeaves() throws {
        XCTAssertEqual(TreeQueryEvaluator.evaluate(TreeQuery(index: .key), on: try node(5)), .whole(try node(5)))
        XCTAssertEqual(TreeQueryEvaluator.evaluate(TreeQuery(index: .key, limit: .first(1)), on: try node(5)), .children([]))
        let empty = TreeQueryEvaluator.Result.children([])
        XCTAssertEqual(String(decoding: empty.bytes(format: .plain, style: .compact), as: UTF8.self), "null")
    }

    func testResultBytesInQueryOrder() throws {
        let result = TreeQueryEvaluator.evaluate(TreeQuery(index: .value, limit: .first(3)), on: try node(["a": 3, "b": 1, "c": 2]))
        XCTAssertEqual(String(decoding: result.bytes(format: .plain, style: .compact), as: UTF8.self), #"{"b":1,"c":2,"a":3}"#)
    }
}
