import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import XCTest

/// Seeds `c/a` (n=1), `c/b` (n=2), `c/c` (n=3, s="x"), `c/a/sub/x`, `other/o`.
func seed(_ backend: Backend) async throws -> CommitResult {
    let db = backend.documents.database(testDB)
    func set(_ path: String, _ fields: [String: Value]) -> Write {
        Write(path: ResourcePath(path.split(separator: "/").map(String.init)), operation: .update(fields: fields, mask: nil))
    }
    return try await db.commit([
        set("c/a", ["n": .integer(1)]), set("c/b", ["n": .integer(2)]), set("c/c", ["n": .integer(3), "s": .string("x")]),
        set("c/a/sub/x", ["n": .integer(10)]), set("other/o", [:]),
    ])
}

final class ListRouteTests: XCTestCase {
    func testListPagingOrderAndMask() async throws {
        try await withServer { client, backend in
            _ = try await seed(backend)
            let all = try await client.send(.get, "\(base)/c")
            XCTAssertEqual(all.status, 200)
            XCTAssertEqual(all.json?["documents"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["\(root)/c/a", "\(root)/c/b", "\(root)/c/c"])
            XCTAssertNil(all.json?["nextPageToken"])

            let page1 = try await client.send(.get, "\(base)/c?pageSize=2&orderBy=n%20desc&mask.fieldPaths=s")
            XCTAssertEqual(page1.json?["documents"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["\(root)/c/c", "\(root)/c/b"])
            XCTAssertEqual(JSONWriter.string(page1.json?["documents"]?.arrayValue?.first?["fields"] ?? nil), #"{"s":{"stringValue":"x"}}"#)
            XCTAssertNil(page1.json?["documents"]?.arrayValue?.last?["fields"], "masked to nothing")
            let token = try XCTUnwrap(page1.json?["nextPageToken"]?.stringValue)
            let page2 = try await client.send(.get, "\(base)/c?pageSize=2&orderBy=n%20desc&pageToken=\(percentEncode(token))")
            XCTAssertEqual(page2.json?["documents"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["\(root)/c/a"])
            XCTAssertNil(page2.json?["nextPageToken"])

            let snake = try await client.send(.get, "\(base)/c?page_size=1&order_by=__name__%20desc")
            XCTAssertEqual(snake.json?["documents"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["\(root)/c/c"])

            let withMissing = try await client.send(.get, "\(base)/c?showMissing=true")
            XCTAssertEqual(withMissing.json?["documents"]?.arrayValue?.count, 3, "c/a exists, so nothing is missing")
            _ = try await client.send(.delete, "\(base)/c/a")
            let missing = try await client.send(.get, "\(base)/c?showMissing=true")
            XCTAssertEqual(missing.json?["documents"]?.arrayValue?.first.map { JSONWriter.string($0) }, #"{"name":"\#(root)/c/a"}"#)

            let sub = try await client.send(.get, "\(base)/c/a/sub")
            XCTAssertEqual(sub.json?["documents"]?.arrayValue?.count, 1)
            do { let r = try await client.send(.get, "\(base)/empty"); XCTAssertEqual(r.text, "{}") }

            assertError(try await client.send(.get, "\(base)/c?pageSize=x"), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.get, "\(base)/c?pageSize=-1"), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.get, "\(base)/c?pageToken=garbage"), 400, "INVALID_ARGUMENT", contains: "page token")
            assertError(try await client.send(.get, "\(base)/c?orderBy=n%20sideways"), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.get, "\(base)/c?showMissing=perhaps"), 400, "INVALID_ARGUMENT")
        }
    }
}

final class BatchGetRouteTests: XCTestCase {
    func testFoundMissingAndTransaction() async throws {
        try await withServer { client, backend in
            _ = try await seed(backend)
            let reply = try await client.send(.post, "\(base):batchGet", #"{"documents":["\#(root)/c/a","\#(root)/c/zz"],"mask":{"fieldPaths":["n"]}}"#)
            XCTAssertEqual(reply.status, 200, reply.text)
            let items = try XCTUnwrap(reply.json?.arrayValue)
            XCTAssertEqual(items.count, 2)
            XCTAssertEqual(items[0]["found"]?["name"]?.stringValue, "\(root)/c/a")
            XCTAssertEqual(JSONWriter.string(items[0]["found"]?["fields"] ?? nil), #"{"n":{"integerValue":"1"}}"#)
            XCTAssertEqual(items[1]["missing"]?.stringValue, "\(root)/c/zz")
            XCTAssertNotNil(Timestamp(rfc3339: items[1]["readTime"]?.stringValue ?? ""))
            XCTAssertNil(items[0]["transaction"])

            let started = try await client.send(.post, "\(base):batchGet", #"{"documents":["\#(root)/c/a"],"newTransaction":{"readOnly":{}}}"#)
            let tx = try XCTUnwrap(started.json?.arrayValue?.first?["transaction"]?.stringValue)
            XCTAssertNotNil(Base64.decode(tx))
            let inTx = try await client.send(.post, "\(base):batchGet", #"{"documents":["\#(root)/c/b"],"transaction":"\#(tx)"}"#)
            XCTAssertEqual(inTx.status, 200)

            let onlyTx = try await client.send(.post, "\(base):batchGet", #"{"documents":[],"newTransaction":{}}"#)
            XCTAssertNotNil(onlyTx.json?.arrayValue?.first?["transaction"], "a transaction started with no documents is still returned")
            do { let r = try await client.send(.post, "\(base):batchGet", #"{"documents":[]}"#); XCTAssertEqual(r.text, "[]") }

            assertError(try await client.send(.post, "\(base):batchGet", "{}"), 400, "INVALID_ARGUMENT", contains: "documents")
            assertError(try await client.send(.post, "\(base):batchGet", #"{"documents":[1]}"#), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.post, "\(base):batchGet", #"{"documents":["\#(root)/c"]}"#), 400, "INVALID_ARGUMENT", contains: "not a document")
            assertError(try await client.send(.post, "\(base):batchGet", #"{"documents":["projects/x/databases/(default)/documents/c/a"]}"#), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.post, "\(base):batchGet", #"{"documents":["\#(root)/c/a"],"transaction":"x","readTime":"2020-01-01T00:00:00Z"}"#),
                        400, "INVALID_ARGUMENT", contains: "Only one of")
        }
    }
}

/// A runQuery body: the structured query plus any extra members (`,"transaction":…`).
func query(_ structured: String, extra: String = "") -> String { #"{"structuredQuery":\#(structured)\#(extra)}"# }

final class RunQueryRouteTests: XCTestCase {
    func testResultsAndEmptyResult() async throws {
        try await withServer { client, backend in
            _ = try await seed(backend)
            let reply = try await client.send(.post, "\(base):runQuery", query("""
                {"from":[{"collectionId":"c"}],"where":{"fieldFilter":{"field":{"fieldPath":"n"},"op":"GREATER_THAN","value":{"integerValue":"1"}}},
                 "orderBy":[{"field":{"fieldPath":"n"},"direction":"DESCENDING"}],"select":{"fields":[{"fieldPath":"n"}]}}
                """))
            XCTAssertEqual(reply.status, 200, reply.text)
            let items = try XCTUnwrap(reply.json?.arrayValue)
            XCTAssertEqual(items.compactMap { $0["document"]?["name"]?.stringValue }, ["\(root)/c/c", "\(root)/c/b"])
            XCTAssertEqual(JSONWriter.string(items[0]["document"]?["fields"] ?? nil), #"{"n":{"integerValue":"3"}}"#, "select projects")
            let readTime = try XCTUnwrap(items[0]["readTime"]?.stringValue)
            XCTAssertEqual(items[1]["readTime"]?.stringValue, readTime)

            let none = try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"nothing"}]}"#))
            let noneItems = try XCTUnwrap(none.json?.arrayValue)
            XCTAssertEqual(noneItems.count, 1)
            XCTAssertEqual(noneItems[0].objectValue?.keys.elements, ["readTime"])
        }
    }

    func testOffsetParentsGroupsAndEnumNumbers() async throws {
        try await withServer { client, backend in
            _ = try await seed(backend)
            let offset = try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"c"}],"offset":1,"limit":{"value":1}}"#))
            let items = try XCTUnwrap(offset.json?.arrayValue)
            XCTAssertEqual(items.count, 1)
            XCTAssertEqual(items[0]["skippedResults"], .int(1))
            XCTAssertEqual(items[0]["document"]?["name"]?.stringValue, "\(root)/c/b")

            let allSkipped = try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"c"}],"offset":10}"#))
            XCTAssertEqual(allSkipped.json?.arrayValue?.first?["skippedResults"], .int(3))
            XCTAssertNil(allSkipped.json?.arrayValue?.first?["document"])

            let under = try await client.send(.post, "\(base)/c/a:runQuery", query(#"{"from":[{"collectionId":"sub"}]}"#))
            XCTAssertEqual(under.json?.arrayValue?.compactMap { $0["document"]?["name"]?.stringValue }, ["\(root)/c/a/sub/x"])
            let group = try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"sub","allDescendants":true}]}"#))
            XCTAssertEqual(group.json?.arrayValue?.count, 1)

            let numbers = try await client.send(.post, "\(base):runQuery", query("""
                {"from":[{"collection_id":"c"}],"where":{"field_filter":{"field":{"field_path":"n"},"op":3,"value":{"integer_value":"1"}}},
                 "order_by":[{"field":{"field_path":"n"},"direction":2}]}
                """))
            XCTAssertEqual(numbers.json?.arrayValue?.compactMap { $0["document"]?["name"]?.stringValue }, ["\(root)/c/c", "\(root)/c/b"])
            var intEnums = HTTPFields()
            intEnums[.contentType] = "application/json"
            let unaryByNumber = try await client.send(.post, "\(base):runQuery?%24alt=json%3Benum-encoding%3Dint", query("""
                {"from":[{"collectionId":"c"}],"where":{"unaryFilter":{"op":5,"field":{"fieldPath":"s"}}}}
                """), headers: intEnums)
            XCTAssertEqual(unaryByNumber.json?.arrayValue?.compactMap { $0["document"]?["name"]?.stringValue }, ["\(root)/c/c"])
        }
    }

    func testTransactionsAndReadTime() async throws {
        try await withServer { client, backend in
            let seeded = try await seed(backend)
            let started = try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"c"}]}"#, extra: #","newTransaction":{"readWrite":{}}"#))
            let items = try XCTUnwrap(started.json?.arrayValue)
            let tx = try XCTUnwrap(items[0]["transaction"]?.stringValue)
            XCTAssertNil(items[1]["transaction"], "only the first response carries the transaction")
            // The query's documents are locked: a write from outside waits, then gives up.
            let outside = try await client.send(.patch, "\(base)/c/a", #"{"fields":{"n":{"integerValue":"100"}}}"#)
            assertError(outside, 409, "ABORTED", contains: "Too much contention")
            let commit = try await client.send(.post, "\(base):commit", #"{"writes":[],"transaction":"\#(tx)"}"#)
            XCTAssertEqual(commit.status, 200)

            let past = try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"c"}],"where":{"fieldFilter":{"field":{"fieldPath":"n"},"op":"EQUAL","value":{"integerValue":"1"}}}}"#,
                                                                          extra: #","readTime":"\#(seeded.commitTime.rfc3339)""#))
            XCTAssertEqual(past.json?.arrayValue?.first?["document"]?["name"]?.stringValue, "\(root)/c/a")
            XCTAssertEqual(past.json?.arrayValue?.first?["readTime"]?.stringValue, seeded.commitTime.rfc3339)
        }
    }

    func testInvalidQueries() async throws {
        try await withServer { client, _ in
            assertError(try await client.send(.post, "\(base):runQuery", "{}"), 400, "INVALID_ARGUMENT", contains: "structuredQuery")
            assertError(try await client.send(.post, "\(base):runQuery", query(#"{"from":[]}"#)), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"c"}],"where":{"fieldFilter":{"field":{"fieldPath":"n"},"op":"IN","value":{"arrayValue":{}}}}}"#)),
                        400, "INVALID_ARGUMENT", contains: "non-empty array")
            assertError(try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"c"}],"limit":-5}"#)), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.post, "\(base)/c:runQuery", query(#"{"from":[{"collectionId":"c"}]}"#)), 404, "NOT_FOUND")
            assertError(try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"c"}]}"#, extra: #","transaction":"nope""#)),
                        400, "INVALID_ARGUMENT", contains: "no longer valid")
            assertError(try await client.send(.post, "\(base):runQuery", query(#"{"from":[{"collectionId":"c"}]}"#, extra: #","readTime":5"#)),
                        400, "INVALID_ARGUMENT", contains: "readTime")
        }
    }

    func testAggregations() async throws {
        try await withServer { client, backend in
            _ = try await seed(backend)
            let reply = try await client.send(.post, "\(base):runAggregationQuery", """
                {"structuredAggregationQuery":{"structuredQuery":{"from":[{"collectionId":"c"}]},
                 "aggregations":[{"alias":"count","count":{}},{"alias":"total","sum":{"field":{"fieldPath":"n"}}},{"avg":{"field":{"fieldPath":"n"}}},
                                 {"alias":"few","count":{"upTo":"2"}}]}}
                """)
            XCTAssertEqual(reply.status, 200, reply.text)
            let items = try XCTUnwrap(reply.json?.arrayValue)
            XCTAssertEqual(items.count, 1)
            XCTAssertEqual(JSONWriter.string(items[0]["result"] ?? nil),
                           #"{"aggregateFields":{"count":{"integerValue":"3"},"total":{"integerValue":"6"},"field_1":{"doubleValue":2},"few":{"integerValue":"2"}}}"#)
            XCTAssertNotNil(Timestamp(rfc3339: items[0]["readTime"]?.stringValue ?? ""))

            let empty = try await client.send(.post, "\(base):runAggregationQuery", """
                {"structured_aggregation_query":{"structured_query":{"from":[{"collectionId":"none"}]},"aggregations":[{"alias":"s","sum":{"field":{"fieldPath":"n"}}},{"alias":"a","avg":{"field":{"fieldPath":"n"}}}]}}
                """)
            XCTAssertEqual(JSONWriter.string(empty.json?.arrayValue?.first?["result"] ?? nil), #"{"aggregateFields":{"s":{"integerValue":"0"},"a":{"nullValue":null}}}"#)

            assertError(try await client.send(.post, "\(base):runAggregationQuery", #"{"structuredAggregationQuery":{"aggregations":[{"count":{}}]}}"#),
                        400, "INVALID_ARGUMENT", contains: "structuredQuery")
            assertError(try await client.send(.post, "\(base):runAggregationQuery", #"{"structuredAggregationQuery":{"structuredQuery":{"from":[{"collectionId":"c"}]},"aggregations":[]}}"#),
                        400, "INVALID_ARGUMENT", contains: "Aggregations can not be empty")
        }
    }

    func testListCollectionIDs() async throws {
        try await withServer { client, backend in
            _ = try await seed(backend)
            do { let r = try await client.send(.post, "\(base):listCollectionIds", "{}"); XCTAssertEqual(r.text, #"{"collectionIds":["c","other"]}"#) }
            do { let r = try await client.send(.post, "\(base):listCollectionIds"); XCTAssertEqual(r.text, #"{"collectionIds":["c","other"]}"#) }
            do { let r = try await client.send(.post, "\(base)/c/a:listCollectionIds", "{}"); XCTAssertEqual(r.text, #"{"collectionIds":["sub"]}"#) }
            do { let r = try await client.send(.post, "\(base)/c/b:listCollectionIds", "{}"); XCTAssertEqual(r.text, "{}") }
            let page1 = try await client.send(.post, "\(base):listCollectionIds", #"{"pageSize":1}"#)
            XCTAssertEqual(page1.json?["collectionIds"], ["c"])
            let token = try XCTUnwrap(page1.json?["nextPageToken"]?.stringValue)
            let page2 = try await client.send(.post, "\(base):listCollectionIds", #"{"page_size":1,"page_token":"\#(token)"}"#)
            XCTAssertEqual(page2.text, #"{"collectionIds":["other"]}"#)
            assertError(try await client.send(.post, "\(base):listCollectionIds", #"{"pageToken":"!!"}"#), 400, "INVALID_ARGUMENT", contains: "page token")
            assertError(try await client.send(.post, "\(base)/c:listCollectionIds", "{}"), 404, "NOT_FOUND")
        }
    }
}
