import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import XCTest

final class CommitRouteTests: XCTestCase {
    func testCommitResultsExactly() async throws {
        try await withServer { client, _ in
            let reply = try await client.send(.post, "\(base):commit", """
                {"writes":[
                  {"update":{"name":"\(root)/c/a","fields":{"n":{"integerValue":"1"}}},"currentDocument":{"exists":false}},
                  {"update":{"name":"\(root)/c/b","fields":{}},"updateTransforms":[{"fieldPath":"t","setToServerValue":"REQUEST_TIME"},
                    {"fieldPath":"i","increment":{"integerValue":"5"}},{"fieldPath":"arr","appendMissingElements":{"values":[{"integerValue":"1"}]}}]},
                  {"delete":"\(root)/c/zzz"},
                  {"transform":{"document":"\(root)/c/a","fieldTransforms":[{"fieldPath":"n","maximum":{"doubleValue":0.5}}]}}
                ]}
                """)
            XCTAssertEqual(reply.status, 200, reply.text)
            let commitTime = try XCTUnwrap(reply.json?["commitTime"]?.stringValue)
            XCTAssertEqual(reply.text, """
                {"writeResults":[{"updateTime":"\(commitTime)"},{"updateTime":"\(commitTime)","transformResults":[{"timestampValue":"\(commitTime)"},\
                {"integerValue":"5"},{"nullValue":null}]},{},{"updateTime":"\(commitTime)","transformResults":[{"integerValue":"1"}]}],"commitTime":"\(commitTime)"}
                """)
            let b = try await client.send(.get, "\(base)/c/b")
            XCTAssertEqual(JSONWriter.string(b.json?["fields"] ?? nil),
                           #"{"arr":{"arrayValue":{"values":[{"integerValue":"1"}]}},"i":{"integerValue":"5"},"t":{"timestampValue":"\#(commitTime)"}}"#)
        }
    }

    func testCommitIsAtomicAndReportsTheFailingWrite() async throws {
        try await withServer { client, _ in
            _ = try await client.send(.post, "\(base)/c?documentId=exists", "{}")
            let reply = try await client.send(.post, "\(base):commit", """
                {"writes":[{"update":{"name":"\(root)/c/new","fields":{}}},
                           {"update":{"name":"\(root)/c/exists","fields":{}},"currentDocument":{"exists":false}}]}
                """)
            assertError(reply, 409, "ALREADY_EXISTS", contains: "\(root)/c/exists")
            assertError(try await client.send(.get, "\(base)/c/new"), 404, "NOT_FOUND")
            let updateTime = try await client.send(.post, "\(base):commit", """
                {"writes":[{"update":{"name":"\(root)/c/exists","fields":{}},"currentDocument":{"updateTime":"1999-01-01T00:00:00Z"}}]}
                """)
            assertError(updateTime, 400, "FAILED_PRECONDITION")
            let missing = try await client.send(.post, "\(base):commit", """
                {"writes":[{"update":{"name":"\(root)/c/none","fields":{}},"updateMask":{"fieldPaths":[]},"currentDocument":{"exists":true}}]}
                """)
            assertError(missing, 404, "NOT_FOUND", contains: "No document to update: \(root)/c/none")
        }
    }

    func testWriteLimitsAndWrongTypes() async throws {
        try await withServer { client, _ in
            let many = (0...500).map { #"{"delete":"\#(root)/c/d\#($0)"}"# }.joined(separator: ",")
            assertError(try await client.send(.post, "\(base):commit", #"{"writes":[\#(many)]}"#), 400, "INVALID_ARGUMENT",
                        contains: "A maximum of 500 writes allowed per request.")
            assertError(try await client.send(.post, "\(base):batchWrite", #"{"writes":[\#(many)]}"#, headers: Self.owner), 400, "INVALID_ARGUMENT", contains: "500")
            let fiveHundred = (0..<500).map { #"{"update":{"name":"\#(root)/c/d\#($0)","fields":{}}}"# }.joined(separator: ",")
            let ok = try await client.send(.post, "\(base):commit", #"{"writes":[\#(fiveHundred)]}"#)
            XCTAssertEqual(ok.json?["writeResults"]?.arrayValue?.count, 500)

            let cases: [(String, String)] = [
                (#"{"writes":{}}"#, "writes must be a list"),
                (#"{"writes":[5]}"#, "must be an object"),
                (#"{"writes":[{}]}"#, "exactly one"),
                (#"{"writes":[{"update":{"name":"\#(root)/c/x","fields":{"a":{"integerValue":"x"}}}}]}"#, "integerValue"),
                (#"{"writes":[{"update":{"name":"\#(root)/c/x","fields":{"a":{"fooValue":1}}}}]}"#, "unknown value type"),
                (#"{"writes":[{"update":{"name":"c/x","fields":{}}}]}"#, "Invalid resource name"),
                (#"{"writes":[{"update":{"name":"projects/q/databases/(default)/documents/c/x"}}]}"#, "outside the database"),
                (#"{"writes":[],"transaction":5}"#, "transaction"),
                (#"{"writes":[{"update":{"name":"\#(root)/c/x"},"updateTransforms":[{"fieldPath":"n","increment":{"stringValue":"1"}}]}]}"#, "number"),
            ]
            for (body, message) in cases {
                assertError(try await client.send(.post, "\(base):commit", body), 400, "INVALID_ARGUMENT", contains: message)
            }
            let empty = try await client.send(.post, "\(base):commit", "{}")
            XCTAssertEqual(empty.status, 200)
            XCTAssertNotNil(empty.json?["commitTime"])
        }
    }

    static let owner: HTTPFields = [.authorization: "Bearer owner"]

    func testBatchWrite() async throws {
        try await withServer { client, _ in
            _ = try await client.send(.post, "\(base)/c?documentId=there", "{}")
            let writes = """
                {"writes":[{"update":{"name":"\(root)/c/ok","fields":{"a":{"integerValue":"1"}}}},
                           {"update":{"name":"\(root)/c/missing","fields":{}},"currentDocument":{"exists":true}},
                           {"delete":"\(root)/c/there"}]}
                """
            // An admin API: refused to anyone else, whatever the rules.
            assertError(try await client.send(.post, "\(base):batchWrite", writes), 403, "PERMISSION_DENIED", contains: "Batch writes require admin authentication.")
            let reply = try await client.send(.post, "\(base):batchWrite", writes, headers: Self.owner)
            XCTAssertEqual(reply.status, 200, reply.text)
            let results = try XCTUnwrap(reply.json?["writeResults"]?.arrayValue)
            XCTAssertEqual(results.count, 3)
            XCTAssertNotNil(results[0]["updateTime"])
            XCTAssertEqual(results[1], [:])
            XCTAssertEqual(results[2], [:])
            XCTAssertEqual(JSONWriter.string(reply.json?["status"] ?? nil),
                           #"[{},{"code":5,"message":"No document to update: \#(root)/c/missing"},{}]"#)
            do { let r = try await client.send(.get, "\(base)/c/ok"); XCTAssertEqual(r.status, 200) }
            assertError(try await client.send(.get, "\(base)/c/there"), 404, "NOT_FOUND")
            assertError(try await client.send(.post, "\(base):batchWrite", """
                {"writes":[{"delete":"\(root)/c/ok"},{"delete":"\(root)/c/ok"}]}
                """, headers: Self.owner), 400, "INVALID_ARGUMENT", contains: "the same document cannot be written more than once in a single request")
        }
    }
}

final class TransactionRouteTests: XCTestCase {
    func testBeginCommitRollback() async throws {
        try await withServer { client, _ in
            let begin = try await client.send(.post, "\(base):beginTransaction", "{}")
            XCTAssertEqual(begin.status, 200)
            XCTAssertEqual(begin.json?.objectValue?.keys.elements, ["transaction"])
            let tx = try XCTUnwrap(begin.json?["transaction"]?.stringValue)
            XCTAssertEqual(Base64.decode(tx)?.count, 16)
            let commit = try await client.send(.post, "\(base):commit", #"{"writes":[{"update":{"name":"\#(root)/c/t","fields":{}}}],"transaction":"\#(tx)"}"#)
            XCTAssertEqual(commit.status, 200, commit.text)
            assertError(try await client.send(.post, "\(base):commit", #"{"writes":[],"transaction":"\#(tx)"}"#), 400, "INVALID_ARGUMENT",
                        contains: "The referenced transaction has expired or is no longer valid.")

            let second = try await client.send(.post, "\(base):beginTransaction", #"{"options":{"readWrite":{"retryTransaction":"\#(tx)"}}}"#)
            let tx2 = try XCTUnwrap(second.json?["transaction"]?.stringValue)
            do { let r = try await client.send(.post, "\(base):rollback", #"{"transaction":"\#(tx2)"}"#); XCTAssertEqual(r.text, "{}") }
            assertError(try await client.send(.post, "\(base):rollback", #"{"transaction":"\#(tx2)"}"#), 400, "INVALID_ARGUMENT", contains: "no longer valid")
            assertError(try await client.send(.post, "\(base):rollback", "{}"), 400, "INVALID_ARGUMENT", contains: "needs a transaction")
            assertError(try await client.send(.post, "\(base):rollback", #"{"transaction":7}"#), 400, "INVALID_ARGUMENT")
        }
    }

    func testReadOnlyTransactions() async throws {
        try await withServer { client, _ in
            let created = try await client.send(.post, "\(base)/c?documentId=d", #"{"fields":{"v":{"integerValue":"1"}}}"#)
            let createTime = try XCTUnwrap(created.json?["createTime"]?.stringValue)
            let begin = try await client.send(.post, "\(base):beginTransaction", #"{"options":{"readOnly":{"readTime":"\#(createTime)"}}}"#)
            let tx = try XCTUnwrap(begin.json?["transaction"]?.stringValue)
            _ = try await client.send(.patch, "\(base)/c/d", #"{"fields":{"v":{"integerValue":"2"}}}"#)
            let read = try await client.send(.post, "\(base):batchGet", #"{"documents":["\#(root)/c/d"],"transaction":"\#(tx)"}"#)
            XCTAssertEqual(JSONWriter.string(read.json?.arrayValue?.first?["found"]?["fields"] ?? nil), #"{"v":{"integerValue":"1"}}"#)
            XCTAssertEqual(read.json?.arrayValue?.first?["readTime"]?.stringValue, createTime)
            assertError(try await client.send(.post, "\(base):commit", #"{"writes":[{"delete":"\#(root)/c/d"}],"transaction":"\#(tx)"}"#),
                        400, "INVALID_ARGUMENT", contains: "read-only")
            assertError(try await client.send(.post, "\(base):beginTransaction", #"{"options":{"readOnly":{"readTime":"soon"}}}"#),
                        400, "INVALID_ARGUMENT", contains: "readTime")
        }
    }
}
