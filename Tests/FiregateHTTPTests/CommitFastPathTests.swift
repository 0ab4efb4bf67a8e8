import FiregateBackend
import FiregateModel
import HummingbirdTesting
import NIOCore
import XCTest

@testable import FiregateHTTP

/// `:commit` answered from the connection's bytes (`ConnectionFastPath.documentCommit`): what the
/// request check takes, and over a real socket the answers, their order and the refusals are
/// those of the full path.
final class CommitFastPathTests: XCTestCase {
    private static func parse(_ text: String) -> SimpleRequest.Parse { SimpleRequest.parse(ByteBuffer(string: text)) }

    private static func commitBody(_ name: String, _ n: Int, exists: Bool? = nil) -> String {
        let precondition = exists.map { #","currentDocument":{"exists":\#($0)}"# } ?? ""
        return #"{"writes":[{"update":{"name":"\#(root)/\#(name)","fields":{"n":{"integerValue":"\#(n)"}}}\#(precondition)}]}"#
    }

    private static func post(_ body: String, target: String = "\(base):commit", headers: String = "") -> String {
        "POST \(target) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\(headers)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    func testTheCheckTakesPostsWithTheirWholeBody() throws {
        let request = CommitFastPathTests.post(#"{"writes":[]}"#)
        guard case .simple(let simple) = CommitFastPathTests.parse(request + "GET /next") else { return XCTFail("a POST with its body is simple") }
        XCTAssertEqual(simple.method, .post)
        XCTAssertEqual(simple.length, request.utf8.count, "the request ends with its body; the next one stays")
        XCTAssertEqual(simple.bodyLength, 13)
        XCTAssertEqual(simple.body.upperBound, request.utf8.count)
        guard case .incomplete = CommitFastPathTests.parse(String(request.dropLast(3))) else { return XCTFail("a body still arriving is waited for") }
        for refused in [
            "POST /v1/x HTTP/1.1\r\n\r\n",  // no length
            "POST /v1/x HTTP/1.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
            "POST /v1/x HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
            "POST /v1/x HTTP/1.1\r\nContent-Length: 2x\r\n\r\n{}", "POST /v1/x HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "POST /v1/x HTTP/1.1\r\nContent-Length: 65537\r\n\r\n", "POST /v1/x HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n{}",
            "POST /v1/x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
            "POST /v1/x HTTP/1.1\r\nX-HTTP-Method-Override: PATCH\r\nContent-Length: 2\r\n\r\n{}",
            "GET /v1/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", "PUT /v1/x HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
        ] {
            guard case .notSimple = CommitFastPathTests.parse(refused) else { return XCTFail("taken: \(refused.debugDescription)") }
        }
        guard case .simple(let spaced) = CommitFastPathTests.parse("POST /v1/x HTTP/1.1\r\ncontent-length:  2 \r\n\r\n{}") else { return XCTFail() }
        XCTAssertEqual(spaced.bodyLength, 2)
    }

    func testPipelinedCommitsAreAnsweredInOrderAndReadBack() async throws {
        try await withServer(setup: .live) { client, backend in
            let port = try XCTUnwrap(client.port)
            let stream = try RawHTTPStream(port: port, raw: CommitFastPathTests.post(CommitFastPathTests.commitBody("c/a", 1))
                + CommitFastPathTests.post(CommitFastPathTests.commitBody("c/a", 2))
                + "GET \(base)/c/a HTTP/1.1\r\nHost: x\r\n\r\n"
                + CommitFastPathTests.post(CommitFastPathTests.commitBody("c/b", 3)))
            let answered = await stream.read { $0.responses.count == 4 }
            guard answered else { return XCTFail("\(stream.responses)") }
            let bodies = stream.responses.map { try? JSONParser.parse($0.body) }
            let db = backend.documents.database(testDB)
            let a = try XCTUnwrap(db.get(ResourcePath(["c", "a"])).value), b = try XCTUnwrap(db.get(ResourcePath(["c", "b"])).value)
            for (index, expected) in [(1, a.updateTime), (3, b.updateTime)] {
                let time = JSON.string(expected.rfc3339)
                XCTAssertEqual(bodies[index], ["writeResults": [["updateTime": time]], "commitTime": time])
            }
            XCTAssertEqual(bodies[0]?["writeResults"]?.arrayValue?.first?["updateTime"], .string(a.createTime.rfc3339), "the first commit created c/a")
            for index in [0, 1, 3] {
                XCTAssertTrue(stream.responses[index].head.hasPrefix("HTTP/1.1 200 OK\r\n"), stream.responses[index].head)
                XCTAssertTrue(stream.responses[index].head.contains("Content-Type: application/json; charset=utf-8"))
            }
            XCTAssertEqual(bodies[2]?["fields"], ["n": ["integerValue": "2"]], "a read after two commits sees the second")
            let metrics = try await client.send(.get, "/metrics").text
            XCTAssertTrue(metrics.contains(#"firegate_requests_total{surface="documents",method="POST",status="200"} 3"#), metrics)
        }
    }

    /// Input that arrives while a commit becomes durable (here a byte at a time, and more than
    /// one request) waits its turn and is answered in order.
    func testInputArrivingWhileACommitIsDurableWaitsItsTurn() async throws {
        try await withServer(setup: .live) { client, backend in
            let port = try XCTUnwrap(client.port)
            let stream = try RawHTTPStream(port: port, raw: CommitFastPathTests.post(CommitFastPathTests.commitBody("c/a", 1)))
            let behind = CommitFastPathTests.post(CommitFastPathTests.commitBody("c/a", 2)) + "GET \(base)/c/a HTTP/1.1\r\nHost: x\r\n\r\n"
            for byte in behind.utf8 { try stream.send(String(decoding: [byte], as: UTF8.self)) }
            let answered = await stream.read { $0.responses.count == 3 }
            guard answered else { return XCTFail("\(stream.responses)") }
            XCTAssertTrue(stream.responses.allSatisfy { $0.head.hasPrefix("HTTP/1.1 200 OK\r\n") }, "\(stream.responses)")
            let read = try JSONParser.parse(stream.responses[2].body)
            XCTAssertEqual(read["fields"], ["n": ["integerValue": "2"]], "the read comes after both commits")
            XCTAssertEqual(try backend.documents.database(testDB).get(ResourcePath(["c", "a"])).value?.fields, ["n": .integer(2)])
        }
    }

    func testRefusedCommitsGetTheFullPathsErrorsAndChangeNothing() async throws {
        try await withServer(setup: .live) { client, backend in
            let port = try XCTUnwrap(client.port)
            _ = try await backend.documents.database(testDB).commit([setWrite("c/a", ["n": .integer(0)])])
            let requests: [(String, Int, String)] = [
                (CommitFastPathTests.post(#"{"writes":[{"update":"#), 400, "INVALID_ARGUMENT"),
                (CommitFastPathTests.post(#"[1]"#), 400, "INVALID_ARGUMENT"),
                (CommitFastPathTests.post(CommitFastPathTests.commitBody("c/a", 1, exists: false)), 409, "ALREADY_EXISTS"),
                (CommitFastPathTests.post(#"{"writes":[],"transaction":"bm9uZQ=="}"#), 400, "INVALID_ARGUMENT"),
                (CommitFastPathTests.post(#"{"writes":[{"delete":"projects/other/databases/(default)/documents/c/a"}]}"#), 400, "INVALID_ARGUMENT"),
            ]
            for (request, status, name) in requests {
                let fast = try RawHTTPStream(port: port, raw: request)
                let answered = await fast.read { $0.responses.count == 1 }
                guard answered, let answer = fast.responses.first else { return XCTFail("no answer to \(request)") }
                let body = try JSONParser.parse(answer.body)
                XCTAssertTrue(answer.head.hasPrefix("HTTP/1.1 \(status) "), "\(request): \(answer.head)")
                XCTAssertEqual(body["error"]?["status"], .string(name), "\(request): \(answer.body)")
                XCTAssertEqual(body["error"]?["code"], .int(Int64(status)))
            }
            let db = backend.documents.database(testDB)
            XCTAssertEqual(try db.get(ResourcePath(["c", "a"])).value?.fields, ["n": .integer(0)], "no refused commit changed anything")
            XCTAssertEqual(db.documentCount, 1)
        }
    }
}
