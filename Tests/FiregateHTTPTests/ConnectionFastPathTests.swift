import FiregateModel
import NIOCore
import XCTest

@testable import FiregateHTTP

/// Bare document and tree GETs answered from the connection's bytes (`ConnectionFastPath`): what
/// the request check takes, and over a real socket that answers, order and metrics are those
/// of the full path.
final class ConnectionFastPathTests: XCTestCase {
    func parse(_ text: String) -> SimpleRequest.Parse { SimpleRequest.parse(ByteBuffer(string: text)) }

    func isSimple(_ text: String) -> Bool {
        if case .simple = parse(text) { return true }
        return false
    }

    func testTheCheckTakesOnlyBareGets() throws {
        let head = "GET /v1/projects/p/databases/(default)/documents/u/a HTTP/1.1\r\nHost: x\r\n\r\n"
        guard case .simple(let request) = parse(head + "GET /next") else { return XCTFail("a bare GET is simple") }
        XCTAssertEqual(request.length, head.utf8.count, "the head ends at its blank line; the next request stays")
        XCTAssertEqual(request.path, 4..<(4 + "/v1/projects/p/databases/(default)/documents/u/a".utf8.count))
        XCTAssertNil(request.query)
        guard case .simple(let withQuery) = parse("GET /a.json?ns=x HTTP/1.1\r\n\r\n") else { return XCTFail() }
        XCTAssertEqual(withQuery.path, 4..<11)
        XCTAssertEqual(withQuery.query, 12..<16)
        XCTAssertFalse(request.acceptsGzip)
        XCTAssertTrue(isSimple("GET /v1/x HTTP/1.1\r\nConnection: Keep-Alive\r\n\r\n"))
        guard case .simple(let gzip) = parse("GET /v1/x HTTP/1.1\r\naccept-encoding: br, GZIP\r\n\r\n") else { return XCTFail() }
        XCTAssertTrue(gzip.acceptsGzip)
        // Event streams and resumes are noted for the answer to decide (only a listen takes them).
        guard case .simple(let events) = parse("GET /a.json HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n") else { return XCTFail() }
        XCTAssertTrue(events.acceptsEventStream)
        XCTAssertFalse(events.resumes)
        guard case .simple(let resumed) = parse("GET /v1/x:listen HTTP/1.1\r\nlast-event-id: 1.2\r\n\r\n") else { return XCTFail() }
        XCTAssertTrue(resumed.resumes)
        XCTAssertEqual(resumed.lastEventID, "1.2", "the value is kept for the stream to resume after")
        XCTAssertFalse(resumed.acceptsEventStream)
        XCTAssertFalse(isSimple("GET /v1/x:listen HTTP/1.1\r\nLast-Event-ID: 1.2\r\nLast-Event-ID: 1.3\r\n\r\n"), "two positions: the full path decides")

        for refused in [
            "POST /v1/x HTTP/1.1\r\n\r\n",
            "GET /a.json HTTP/1.1\r\nIf-None-Match: \"x\"\r\n\r\n", "GET /a.json HTTP/1.1\r\nX-Firebase-ETag: true\r\n\r\n",
            "GET /v1/x HTTP/1.0\r\n\r\n", "GET /v1/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "GET /v1/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "GET /v1/x HTTP/1.1\r\nConnection: close\r\n\r\n",
            "GET /v1/x HTTP/1.1\r\nX-HTTP-Method-Override: DELETE\r\n\r\n", "GET /v1/x HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
            "GET /v1/x HTTP/1.1\nHost: x\n\n", "GET /v1/x HTTP/1.1\r\nBad Name: v\r\n\r\n", "GET /v1/\u{7F} HTTP/1.1\r\n\r\n",
            "GET /v1/x HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", "get /v1/x HTTP/1.1\r\n\r\n",
            "POST /v1/x:commit HTTP/1.1\r\nFiregate-Forwarded-By: a\r\nContent-Length: 2\r\n\r\n{}",
            "POST /v1/x:commit HTTP/1.1\r\nfiregate-queued-write: batch 1 1 1 c\r\nContent-Length: 2\r\n\r\n{}",
        ] {
            guard case .notSimple = parse(refused) else { return XCTFail("taken: \(refused.debugDescription)") }
        }
        for partial in ["GE", "GET /", "GET /v1/x", "GET /v1/x HTTP/1.1\r", "GET /v1/x HTTP/1.1\r\nHost: x\r\n"] {
            guard case .incomplete = parse(partial) else { return XCTFail("not waited for: \(partial.debugDescription)") }
        }
        guard case .notSimple = parse("GET /v1/x HTTP/1.1\r\nX: " + String(repeating: "a", count: 9000)) else {
            return XCTFail("an endless head is not waited for")
        }
    }

    func testPipelinedRequestsAreAnsweredInOrderAcrossBothPaths() async throws {
        try await withServer(setup: .live) { client, _ in
            let port = try XCTUnwrap(client.port)
            let written = try await client.send(.patch, "\(base)/u/a", #"{"fields":{"n":{"integerValue":"1"}}}"#)
            XCTAssertEqual(written.status, 200)
            let get = { (path: String) in "GET \(base)/\(path) HTTP/1.1\r\nHost: x\r\n\r\n" }
            let patch = #"{"fields":{"n":{"integerValue":"2"}}}"#
            // Fast, fast (404), full path (a body), then a bare GET that must wait for the PATCH.
            let stream = try RawHTTPStream(port: port, raw: get("u/a") + get("u/missing")
                + "PATCH \(base)/u/a HTTP/1.1\r\nHost: x\r\nContent-Length: \(patch.utf8.count)\r\n\r\n\(patch)" + get("u/a"))
            let answered = await stream.read { $0.responses.count == 4 }
            guard answered else { return XCTFail("\(stream.responses)") }
            let responses = stream.responses
            XCTAssertEqual(responses.map { $0.head.components(separatedBy: "\r\n")[0] },
                           ["HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found", "HTTP/1.1 200 OK", "HTTP/1.1 200 OK"])
            XCTAssertEqual(try JSONParser.parse(responses[0].body), written.json)
            XCTAssertEqual(try JSONParser.parse(responses[1].body)["error"]?["message"],
                           .string("Document \"\(root)/u/missing\" not found."))
            XCTAssertEqual(try JSONParser.parse(responses[1].body)["error"]?["status"], .string("NOT_FOUND"))
            XCTAssertEqual(try JSONParser.parse(responses[3].body)["fields"]?["n"], ["integerValue": "2"], "the GET after the PATCH sees it")
            for response in responses {
                XCTAssertTrue(response.head.contains("Content-Type: application/json; charset=utf-8"), response.head)
                XCTAssertTrue(response.head.contains("Server: firegate"), response.head)
                XCTAssertTrue(response.head.contains("Date: "), response.head)
            }
        }
    }

    func testAHeadArrivingInPiecesIsAnswered() async throws {
        try await withServer(setup: .live) { client, _ in
            let port = try XCTUnwrap(client.port)
            _ = try await client.send(.patch, "\(base)/u/a", #"{"fields":{"n":{"integerValue":"1"}}}"#)
            let stream = try RawHTTPStream(port: port, raw: "GET \(base)/u/a HT")
            try await Task.sleep(for: .milliseconds(50))
            try stream.send("TP/1.1\r\nHost: x\r\n")
            try await Task.sleep(for: .milliseconds(50))
            try stream.send("\r\n")
            let answered = await stream.read { $0.responses.count == 1 }
            XCTAssertTrue(answered)
            XCTAssertEqual(try JSONParser.parse(stream.responses.first?.body ?? "")["fields"]?["n"], ["integerValue": "1"])
        }
    }

    func testFastAnswersAreCountedAndLargeBodiesStillGzipped() async throws {
        try await withServer(setup: .live) { client, _ in
            let port = try XCTUnwrap(client.port)
            let big = String(repeating: "x", count: 4000)
            _ = try await client.send(.patch, "\(base)/u/big", #"{"fields":{"s":{"stringValue":"\#(big)"}}}"#)
            let plain = try RawHTTPStream(port: port, raw: "GET \(base)/u/big HTTP/1.1\r\nHost: x\r\n\r\n" + "GET \(base)/u/none HTTP/1.1\r\n\r\n")
            let answered = await plain.read { $0.responses.count == 2 }
            guard answered else { return XCTFail("\(plain.responses)") }
            XCTAssertEqual(try JSONParser.parse(plain.responses[0].body)["fields"]?["s"]?["stringValue"], .string(big))

            let gzip = try RawHTTPStream(port: port, raw: "GET \(base)/u/big HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
            let zipped = await gzip.read { $0.responses.count == 1 }
            guard zipped else { return XCTFail("no answer") }
            XCTAssertTrue(gzip.responses.first?.head.lowercased().contains("content-encoding: gzip") ?? false, gzip.responses.first?.head ?? "")

            // A large tree location is read from its namespace and compressed there.
            let stored = try await client.send(.put, "/big.json?ns=gz", "\"\(big)\"")
            XCTAssertEqual(stored.status, 200)
            let tree = try RawHTTPStream(port: port, raw: "GET /big.json?ns=gz HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n")
            let treeZipped = await tree.read { $0.responses.count == 1 }
            guard treeZipped, let head = tree.responses.first?.head.lowercased() else { return XCTFail("no tree answer") }
            XCTAssertTrue(head.contains("content-encoding: gzip") && head.contains("vary: accept-encoding"), head)

            let metrics = try await client.send(.get, "/metrics")
            XCTAssertTrue(metrics.text.contains(#"firegate_requests_total{surface="documents",method="GET",status="200"} 2"#), metrics.text)
            XCTAssertTrue(metrics.text.contains(#"firegate_requests_total{surface="documents",method="GET",status="404"} 1"#), metrics.text)
        }
    }

    func testTreeGetsAreAnsweredFromTheCacheOrTheirNamespaceInOrder() async throws {
        try await withServer(setup: .live) { client, _ in
            let port = try XCTUnwrap(client.port)
            let written = [try await client.send(.put, "/users/ada.json", #"{"name":"Ada"}"#),
                           try await client.send(.put, "/users/ada.json?ns=other", #""elsewhere""#)]
            XCTAssertEqual(written.map(\.status), [200, 200])
            let get = { (target: String) in "GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n" }
            // Not cached (read from the namespace), cached, another namespace, a parameter the
            // fast path leaves to the full path, then a write and a read that must see it.
            let stream = try RawHTTPStream(port: port, raw: get("/users/ada.json") + get("/users/ada/name.json") + get("/users/ada.json")
                + get("/users/ada.json?ns=other") + get("/users.json?print=pretty")
                + "PUT /users/ada/name.json HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n\"Grace\"" + get("/users/ada.json"))
            let answered = await stream.read { $0.responses.count == 7 }
            guard answered else { return XCTFail("\(stream.responses)") }
            let bodies = stream.responses.map(\.body)
            XCTAssertEqual(Array(bodies.prefix(4)), [#"{"name":"Ada"}"#, #""Ada""#, #"{"name":"Ada"}"#, #""elsewhere""#])
            XCTAssertEqual(try JSONParser.parse(bodies[4]), ["ada": ["name": "Ada"]])
            XCTAssertTrue(bodies[4].contains("\n"), "print=pretty went the full way")
            XCTAssertEqual(bodies[5], #""Grace""#)
            XCTAssertEqual(bodies[6], #"{"name":"Grace"}"#, "a read after a write sees it")
            for response in stream.responses {
                XCTAssertTrue(response.head.hasPrefix("HTTP/1.1 200 OK"), response.head)
                XCTAssertTrue(response.head.contains("Access-Control-Allow-Origin: *"), response.head)
            }
            XCTAssertTrue(stream.responses[0].head.contains("Cache-Control: no-cache"), stream.responses[0].head)
        }
    }

    func testAnAnswerUnderWayStillGoesOutWhenTheClientHalfCloses() async throws {
        try await withServer(setup: .live) { client, _ in
            let port = try XCTUnwrap(client.port)
            let written = try await client.send(.put, "/a/b.json?ns=half", "42")
            XCTAssertEqual(written.status, 200)
            let stream = try RawHTTPStream(port: port, raw: "GET /a.json?ns=half HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /a/b.json?ns=half HTTP/1.1\r\n\r\n")
            stream.halfClose()
            let answered = await stream.read { $0.responses.count == 2 }
            guard answered else { return XCTFail("\(stream.responses)") }
            XCTAssertEqual(stream.responses.map(\.body), [#"{"b":42}"#, "42"])
        }
    }
}
