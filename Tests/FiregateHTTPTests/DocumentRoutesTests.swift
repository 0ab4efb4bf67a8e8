import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import XCTest

final class DocumentCRUDRouteTests: XCTestCase {
    func testCreateGetPatchDelete() async throws {
        try await withServer { client, _ in
            let created = try await client.send(.post, "\(base)/cities?documentId=SF", #"{"fields":{"name":{"stringValue":"San Francisco"},"pop":{"integerValue":"870000"}}}"#)
            XCTAssertEqual(created.status, 200, created.text)
            XCTAssertEqual(created.headers[.contentType], "application/json; charset=utf-8")
            let createTime = try XCTUnwrap(created.json?["createTime"]?.stringValue)
            XCTAssertEqual(created.json?["updateTime"]?.stringValue, createTime)
            XCTAssertNotNil(Timestamp(rfc3339: createTime))
            let expected = #"{"name":"\#(root)/cities/SF","fields":{"name":{"stringValue":"San Francisco"},"pop":{"integerValue":"870000"}},"createTime":"\#(createTime)","updateTime":"\#(createTime)"}"#
            XCTAssertEqual(created.text, expected)

            let got = try await client.send(.get, "\(base)/cities/SF")
            XCTAssertEqual(got.status, 200)
            XCTAssertEqual(got.text, expected)

            let patched = try await client.send(.patch, "\(base)/cities/SF?updateMask.fieldPaths=pop&updateMask.fieldPaths=state",
                                                #"{"fields":{"pop":{"integerValue":"1"},"state":{"stringValue":"CA"},"ignored":{"nullValue":null}}}"#)
            XCTAssertEqual(patched.status, 200, patched.text)
            XCTAssertEqual(JSONWriter.string(patched.json?["fields"] ?? nil),
                           #"{"name":{"stringValue":"San Francisco"},"pop":{"integerValue":"1"},"state":{"stringValue":"CA"}}"#)
            XCTAssertEqual(patched.json?["createTime"]?.stringValue, createTime)
            XCTAssertNotEqual(patched.json?["updateTime"]?.stringValue, createTime)

            let deleted = try await client.send(.delete, "\(base)/cities/SF")
            XCTAssertEqual(deleted.status, 200)
            XCTAssertEqual(deleted.text, "{}")
            let gone = try await client.send(.get, "\(base)/cities/SF")
            XCTAssertEqual(gone.text, #"{"error":{"code":404,"message":"Document \"\#(root)/cities/SF\" not found.","status":"NOT_FOUND"}}"#)
            assertError(gone, 404, "NOT_FOUND")
        }
    }

    func testCreateRules() async throws {
        try await withServer { client, _ in
            let auto = try await client.send(.post, "\(base)/c", "{}")
            XCTAssertEqual(auto.status, 200)
            let name = try XCTUnwrap(auto.json?["name"]?.stringValue)
            let id = String(name.split(separator: "/").last!)
            XCTAssertEqual(id.count, 20)
            XCTAssertTrue(name.hasPrefix("\(root)/c/"))
            XCTAssertNil(auto.json?["fields"], "an empty document has no fields member")

            let empty = try await client.send(.post, "\(base)/c?documentId=e")
            XCTAssertEqual(empty.status, 200, "an empty body creates an empty document")
            let again = try await client.send(.post, "\(base)/c?documentId=e", "{}")
            assertError(again, 409, "ALREADY_EXISTS", contains: "Document already exists: \(root)/c/e")

            assertError(try await client.send(.post, "\(base)/c?documentId=a%2Fb", "{}"), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.post, "\(base)/c?documentId=__x__", "{}"), 400, "INVALID_ARGUMENT", contains: "reserved")
            assertError(try await client.send(.post, "\(base)/c?documentId=x", #"{"name":"\#(root)/c/x"}"#), 400, "INVALID_ARGUMENT", contains: "documentId")
            assertError(try await client.send(.post, "\(base)/c?documentId=x", #"{"fields":{"__bad__":{"nullValue":null}}}"#), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.post, "\(base)/c?documentId=x", #"{"fields":{"a":{"integerValue":"one"}}}"#), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.post, "\(base)/c/d?documentId=x", "{}"), 404, "NOT_FOUND")

            let masked = try await client.send(.post, "\(base)/c?documentId=m&mask.fieldPaths=a", #"{"fields":{"a":{"integerValue":"1"},"b":{"integerValue":"2"}}}"#)
            XCTAssertEqual(JSONWriter.string(masked.json?["fields"] ?? nil), #"{"a":{"integerValue":"1"}}"#)
            let stored = try await client.send(.get, "\(base)/c/m")
            XCTAssertNotNil(stored.json?["fields"]?["b"], "the mask only projects the response")
        }
    }

    func testGetOptions() async throws {
        try await withServer { client, backend in
            let db = backend.documents.database(testDB)
            let first = try await db.commit([Write(path: ResourcePath(["c", "d"]), operation: .update(fields: ["a": .integer(1), "b": .map(["c": .integer(2), "d": .integer(3)])], mask: nil))])
            _ = try await db.commit([Write(path: ResourcePath(["c", "d"]), operation: .update(fields: ["a": .integer(9), "b": .map(["c": .integer(5), "d": .integer(6)])], mask: nil))])

            let masked = try await client.send(.get, "\(base)/c/d?mask.fieldPaths=b.c&mask.fieldPaths=zzz")
            XCTAssertEqual(JSONWriter.string(masked.json?["fields"] ?? nil), #"{"b":{"mapValue":{"fields":{"c":{"integerValue":"5"}}}}}"#)
            XCTAssertEqual(masked.json?["name"]?.stringValue, "\(root)/c/d")
            XCTAssertNotNil(masked.json?["updateTime"])
            let snake = try await client.send(.get, "\(base)/c/d?mask.field_paths=a")
            XCTAssertEqual(JSONWriter.string(snake.json?["fields"] ?? nil), #"{"a":{"integerValue":"9"}}"#)

            let past = try await client.send(.get, "\(base)/c/d?readTime=\(first.commitTime.rfc3339)")
            XCTAssertEqual(past.status, 200, past.text)
            XCTAssertEqual(JSONWriter.string(past.json?["fields"]?["a"] ?? nil), #"{"integerValue":"1"}"#)

            let tx = try db.beginTransaction(.readWrite(retrying: nil))
            let inTx = try await client.send(.get, "\(base)/c/d?transaction=\(percentEncode(tx))")
            XCTAssertEqual(inTx.status, 200, inTx.text)
            assertError(try await client.send(.get, "\(base)/c/d?transaction=bogus"), 400, "INVALID_ARGUMENT", contains: "transaction")
            assertError(try await client.send(.get, "\(base)/c/d?readTime=yesterday"), 400, "INVALID_ARGUMENT", contains: "readTime")
            assertError(try await client.send(.get, "\(base)/c/d?mask.fieldPaths=a..b"), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.get, "\(base)/c/missing?mask.fieldPaths=a"), 404, "NOT_FOUND")
        }
    }

    func testPercentEncodedNamesAndIDs() async throws {
        try await withServer { client, _ in
            let created = try await client.send(.post, "/v1/projects/p/databases/%28default%29/documents/c?documentId=hello%20w%C3%B6rld", "{}")
            XCTAssertEqual(created.status, 200, created.text)
            XCTAssertEqual(created.json?["name"]?.stringValue, "\(root)/c/hello wörld")
            let got = try await client.send(.get, "/v1/projects/p/databases/%28default%29/documents/c/hello%20w%C3%B6rld")
            XCTAssertEqual(got.status, 200)
            XCTAssertEqual(got.json?["name"]?.stringValue, "\(root)/c/hello wörld")
            let plain = try await client.send(.get, "\(base)/c/hello%20w%C3%B6rld")
            XCTAssertEqual(plain.json?["name"], got.json?["name"])
            // Another database of the same project is separate.
            let other = try await client.send(.get, "/v1/projects/p/databases/other/documents/c/hello%20w%C3%B6rld")
            assertError(other, 404, "NOT_FOUND", contains: "projects/p/databases/other/documents/c/hello wörld")
        }
    }

    func testPatchPreconditionsAndUpsert() async throws {
        try await withServer { client, _ in
            let upsert = try await client.send(.patch, "\(base)/c/d", #"{"fields":{"a":{"integerValue":"1"}}}"#)
            XCTAssertEqual(upsert.status, 200, "patch without precondition creates")
            let updateTime = try XCTUnwrap(upsert.json?["updateTime"]?.stringValue)

            assertError(try await client.send(.patch, "\(base)/c/missing?currentDocument.exists=true", "{}"), 404, "NOT_FOUND",
                        contains: "No document to update: \(root)/c/missing")
            assertError(try await client.send(.patch, "\(base)/c/missing?current_document.exists=true", "{}"), 404, "NOT_FOUND")
            assertError(try await client.send(.patch, "\(base)/c/d?currentDocument.exists=false", "{}"), 409, "ALREADY_EXISTS")
            assertError(try await client.send(.patch, "\(base)/c/d?currentDocument.updateTime=2001-01-01T00:00:00Z", "{}"), 400, "FAILED_PRECONDITION")
            assertError(try await client.send(.patch, "\(base)/c/d?currentDocument.exists=maybe", "{}"), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.patch, "\(base)/c/d?currentDocument.exists=true&currentDocument.updateTime=\(updateTime)", "{}"),
                        400, "INVALID_ARGUMENT", contains: "not both")
            assertError(try await client.send(.delete, "\(base)/c/d?currentDocument.exists=true&currentDocument.updateTime=\(updateTime)"),
                        400, "INVALID_ARGUMENT", contains: "not both")
            let matching = try await client.send(.patch, "\(base)/c/d?currentDocument.updateTime=\(updateTime)", #"{"fields":{"b":{"booleanValue":true}}}"#)
            XCTAssertEqual(matching.status, 200, matching.text)
            XCTAssertEqual(JSONWriter.string(matching.json?["fields"] ?? nil), #"{"b":{"booleanValue":true}}"#, "no mask replaces the document")

            let snakeMask = try await client.send(.patch, "\(base)/c/d?update_mask.field_paths=a", #"{"fields":{"a":{"integerValue":"2"}}}"#)
            XCTAssertEqual(JSONWriter.string(snakeMask.json?["fields"] ?? nil), #"{"a":{"integerValue":"2"},"b":{"booleanValue":true}}"#)
            let deleteByMask = try await client.send(.patch, "\(base)/c/d?updateMask.fieldPaths=b", "{}")
            XCTAssertEqual(JSONWriter.string(deleteByMask.json?["fields"] ?? nil), #"{"a":{"integerValue":"2"}}"#)

            assertError(try await client.send(.patch, "\(base)/c/d", #"{"name":"\#(root)/c/other"}"#), 400, "INVALID_ARGUMENT", contains: "does not match")
            do { let r = try await client.send(.patch, "\(base)/c/d", #"{"name":"\#(root)/c/d","fields":{}}"#); XCTAssertEqual(r.status, 200) }
            assertError(try await client.send(.patch, "\(base)/c/d?updateMask.fieldPaths=__name__", "{}"), 400, "INVALID_ARGUMENT", contains: "reserved")
            assertError(try await client.send(.patch, "\(base)/c/d", #"{"fields":{"a":{"integerValue":"1"},"b":1}}"#), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.patch, "\(base)/c", "{}"), 404, "NOT_FOUND")
        }
    }

    func testMethodOverride() async throws {
        try await withServer { client, _ in
            var headers = HTTPFields()
            headers[HTTPField.Name("X-HTTP-Method-Override")!] = "PATCH"
            let reply = try await client.send(.post, "\(base)/c/d", #"{"fields":{"a":{"integerValue":"1"}}}"#, headers: headers)
            XCTAssertEqual(reply.status, 200, reply.text)
            XCTAssertEqual(reply.json?["name"]?.stringValue, "\(root)/c/d")
        }
    }

    func testDeletePreconditions() async throws {
        try await withServer { client, _ in
            do { let r = try await client.send(.delete, "\(base)/c/missing"); XCTAssertEqual(r.text, "{}", "deleting a missing document succeeds") }
            assertError(try await client.send(.delete, "\(base)/c/missing?currentDocument.exists=true"), 404, "NOT_FOUND",
                        contains: "No document to delete: \(root)/c/missing")
            let created = try await client.send(.post, "\(base)/c?documentId=d", "{}")
            let updateTime = try XCTUnwrap(created.json?["updateTime"]?.stringValue)
            assertError(try await client.send(.delete, "\(base)/c/d?currentDocument.updateTime=2001-01-01T00:00:00.5Z"), 400, "FAILED_PRECONDITION")
            do { let r = try await client.send(.delete, "\(base)/c/d?currentDocument.updateTime=\(updateTime)"); XCTAssertEqual(r.status, 200) }
            assertError(try await client.send(.get, "\(base)/c/d"), 404, "NOT_FOUND")
            assertError(try await client.send(.delete, "\(base)/c"), 404, "NOT_FOUND")
        }
    }

    func testOversizeAndDeepDocuments() async throws {
        try await withServer { client, _ in
            let big = String(repeating: "x", count: 1_048_576)
            let reply = try await client.send(.post, "\(base)/c?documentId=big", #"{"fields":{"s":{"stringValue":"\#(big)"}}}"#)
            assertError(reply, 400, "INVALID_ARGUMENT", contains: "exceeds the maximum allowed size of 1,048,576 bytes")
            assertError(try await client.send(.get, "\(base)/c/big"), 404, "NOT_FOUND")
            var deep = #"{"integerValue":"1"}"#
            for _ in 0..<21 { deep = #"{"mapValue":{"fields":{"m":\#(deep)}}}"# }
            assertError(try await client.send(.patch, "\(base)/c/deep", #"{"fields":{"f":\#(deep)}}"#), 400, "INVALID_ARGUMENT", contains: "nested")
            var hostile = "1"
            for _ in 0..<5000 { hostile = "[\(hostile)]" }
            assertError(try await client.send(.patch, "\(base)/c/deep", hostile), 400, "INVALID_ARGUMENT", contains: "Invalid JSON payload")
        }
    }

    func testBadBodies() async throws {
        try await withServer { client, _ in
            let badJSON = try await client.send(.post, "\(base):commit", #"{"writes": [}"#)
            assertError(badJSON, 400, "INVALID_ARGUMENT", contains: "Invalid JSON payload received.")
            var plain = HTTPFields()
            plain[.contentType] = "text/plain;charset=UTF-8"
            let textPlain = try await client.send(.post, "\(base)/c?documentId=t", #"{"fields":{"a":{"booleanValue":true}}}"#, headers: plain)
            XCTAssertEqual(textPlain.status, 200, "JSON is parsed whatever the Content-Type")
            XCTAssertEqual(JSONWriter.string(textPlain.json?["fields"] ?? nil), #"{"a":{"booleanValue":true}}"#)
            for route in ["\(base):commit", "\(base):batchGet", "\(base):runQuery", "\(base):beginTransaction", "\(base)/c?documentId=arr"] {
                assertError(try await client.send(.post, route, "[]"), 400, "INVALID_ARGUMENT")
                assertError(try await client.send(.post, route, #""text""#), 400, "INVALID_ARGUMENT")
            }
            assertError(try await client.send(.get, "\(base)/c/arr"), 404, "NOT_FOUND", contains: "not found")
        }
    }
}

final class RoutingTests: XCTestCase {
    func testHealthAndUnknownRoutes() async throws {
        try await withServer { client, _ in
            let health = try await client.send(.get, "/healthz")
            XCTAssertEqual(health.status, 200)
            XCTAssertEqual(health.text, #"{"status":"ok"}"#)
            let unknown = try await client.send(.get, "/nope")
            XCTAssertEqual(unknown.text, #"{"error":{"code":404,"message":"No route for GET /nope","status":"NOT_FOUND"}}"#)
            assertError(unknown, 404, "NOT_FOUND")
            assertError(try await client.send(.get, "/v1/projects/p"), 404, "NOT_FOUND", contains: "expected /v1/projects/{project}/databases/{database}/documents")
            assertError(try await client.send(.get, "/v1/projects/p/databases/(default)/collections/c/d"), 404, "NOT_FOUND")
            assertError(try await client.send(.get, "/v1/projects//databases/(default)/documents/c/d"), 404, "NOT_FOUND")
            assertError(try await client.send(.put, "\(base)/c/d", "{}"), 404, "NOT_FOUND", contains: "No route for PUT")
            assertError(try await client.send(.get, "\(base):commit"), 404, "NOT_FOUND")
            assertError(try await client.send(.post, "\(base):partitionQuery", "{}"), 501, "UNIMPLEMENTED")
            assertError(try await client.send(.post, "\(base)/c/d:write", "{}"), 501, "UNIMPLEMENTED")
            assertError(try await client.send(.get, "\(base)/c//d"), 400, "INVALID_ARGUMENT", contains: "empty")
            assertError(try await client.send(.get, "\(base)/c/__x__"), 400, "INVALID_ARGUMENT", contains: "reserved")
            // An unknown verb is part of the document id.
            assertError(try await client.send(.get, "\(base)/c/d:bogus"), 404, "NOT_FOUND", contains: "\(root)/c/d:bogus")
            // A path ending in .json belongs to the tree, not to the documents surface.
            let tree = try await client.send(.get, "/a.json")
            XCTAssertEqual(tree.status, 200)
            XCTAssertEqual(tree.text, "null")
        }
    }

    func testResetRoute() async throws {
        try await withServer { client, backend in
            _ = try await client.send(.post, "\(base)/c?documentId=a", "{}")
            _ = try await client.send(.post, "/v1/projects/other/databases/(default)/documents/c?documentId=a", "{}")
            let reset = try await client.send(.delete, "/emulator/v1/projects/p/databases/%28default%29/documents")
            XCTAssertEqual(reset.status, 200, reset.text)
            XCTAssertEqual(reset.text, "{}")
            assertError(try await client.send(.get, "\(base)/c/a"), 404, "NOT_FOUND")
            do { let r = try await client.send(.get, "/v1/projects/other/databases/(default)/documents/c/a"); XCTAssertEqual(r.status, 200) }
            XCTAssertEqual(backend.documents.database(testDB).documentCount, 0)
            assertError(try await client.send(.get, "/emulator/v1/projects/p/databases/(default)/documents"), 404, "NOT_FOUND", contains: "only DELETE")
            assertError(try await client.send(.post, "/emulator/v1/nothing"), 404, "NOT_FOUND")
        }
    }
}
