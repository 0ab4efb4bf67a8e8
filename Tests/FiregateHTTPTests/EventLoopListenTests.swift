import FiregateBackend
import FiregateHTTP
import FiregateModel
import FiregateTestSupport
import HummingbirdTesting
import XCTest

/// A bare document `:listen` or tree stream is served on its connection's event loop
/// (`EventLoopStream`): the same frames as the full path, chunked; it ends on a reset, a half-close, a hang-up or a
/// shutdown, and a reader that stops reading is reset, not queued for.
final class EventLoopListenTests: XCTestCase {
    private static func streamGauge(_ client: any TestClientProtocol, surface: String = "documents") async throws -> String {
        let text = try await client.send(.get, "/metrics").text
        return text.components(separatedBy: "\n").first { $0.hasPrefix(#"firegate_sse_streams{surface="\#(surface)"}"#) } ?? ""
    }

    func testFramesMatchTheFullPathAndTheStreamEndsWhenTheClientHalfCloses() async throws {
        try await withServer(setup: .live) { client, backend in
            let db = backend.documents.database(testDB)
            let port = try XCTUnwrap(client.port)
            let bare = try RawHTTPStream(port: port, path: "\(base)/c/d:listen", headers: ["Accept: text/event-stream"])
            // A query parameter sends the same listen the full way.
            let full = try RawHTTPStream(port: port, path: "\(base)/c/d:listen?changesOnly=false")
            await waitForEvents(bare, 1)
            await waitForEvents(full, 1)
            let head = try XCTUnwrap(bare.head)
            XCTAssertTrue(head.hasPrefix("HTTP/1.1 200 OK\r\n"), head)
            for field in ["Content-Type: text/event-stream; charset=utf-8", "Cache-Control: no-cache", "X-Accel-Buffering: no",
                          "Server: firegate", "transfer-encoding: chunked"] {
                XCTAssertTrue(head.contains("\r\n\(field)"), "\(field) missing: \(head)")
            }
            let open = try await EventLoopListenTests.streamGauge(client)
            XCTAssertTrue(open.hasSuffix(" 2.0") || open.hasSuffix(" 2"), open)
            _ = try await db.commit([setWrite("c/d", ["v": .integer(1)])])
            _ = try await db.commit([setWrite("c/other", ["v": .integer(1)])])
            _ = try await db.commit([setWrite("c/d", ["v": .integer(2)])])
            await waitForEvents(bare, 3)
            await waitForEvents(full, 3)
            // Each stream's first frame has its own read time; the changes are the same bytes.
            XCTAssertEqual(snapshots(bare).dropFirst().map(\.data), snapshots(full).dropFirst().map(\.data))
            XCTAssertEqual(snapshots(bare).map(\.id), snapshots(full).map(\.id))
            XCTAssertEqual(snapshots(bare).count, 3, "a commit elsewhere sends nothing")

            bare.halfClose()
            let ended = await bare.read { $0.body.ended }
            XCTAssertTrue(ended, "a half-closed stream gets its last chunk")
            await waitUntil("the stream to let go of its subscription") { db.feed.subscriberCount == 1 }
            full.disconnect()
            await waitUntil("both streams to end") { db.feed.subscriberCount == 0 }
            let closed = try await EventLoopListenTests.streamGauge(client)
            XCTAssertTrue(closed.hasSuffix(" 0.0") || closed.hasSuffix(" 0"), closed)
        }
    }

    func testAHangUpFreesTheStreamAtOnce() async throws {
        var options = ListenOptions()
        options.keepAliveSeconds = 3600  // no keep-alive write would notice it
        try await withServer(setup: .live, listen: options) { client, backend in
            let db = backend.documents.database(testDB)
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), path: "\(base)/c/d:listen")
            await waitForEvents(stream, 1)
            XCTAssertEqual(db.feed.subscriberCount, 1)
            stream.disconnect()
            await waitUntil("the stream to notice the client left") { db.feed.subscriberCount == 0 }
        }
    }

    func testAResetEndsTheStreamAndTheConnectionAnswersWhatCameMeanwhile() async throws {
        try await withServer(setup: .live) { client, backend in
            let db = backend.documents.database(testDB)
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), path: "\(base)/c/d:listen")
            await waitForEvents(stream, 1)
            // A request pipelined behind the stream waits for it to end.
            try stream.send("GET \(base)/c/missing HTTP/1.1\r\nHost: x\r\n\r\n")
            try await Task.sleep(for: .milliseconds(100))
            XCTAssertFalse(stream.body.ended)
            try await db.reset()
            let answered = await stream.read { $0.body.ended && $0.rawText.contains("HTTP/1.1 404") }
            XCTAssertTrue(answered, stream.rawText)
            let last = try XCTUnwrap(snapshots(stream).last)
            XCTAssertEqual(last.name, "error")
            XCTAssertEqual(last.data, #"{"error":{"code":409,"message":"The database was reset.","status":"ABORTED"}}"#)
            XCTAssertEqual(db.feed.subscriberCount, 0)
        }
    }

    func testASlowReaderIsResetInsteadOfQueuedFor() async throws {
        var options = ListenOptions()
        options.bufferLimit = 4
        options.keepAliveSeconds = 3600
        try await withServer(setup: .live, listen: options) { client, backend in
            let db = backend.documents.database(testDB)
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), path: "\(base)/c/d:listen")
            await waitForEvents(stream, 1)
            // Every commit changes the document (~64 KB per frame); the client reads nothing.
            let payload = Value.string(String(repeating: "x", count: 64 * 1024))
            let commits = 400
            for n in 1...commits {
                _ = try await db.commit([setWrite("c/d", ["n": .integer(Int64(n)), "s": payload])])
            }
            let caughtUp = await stream.read(timeout: 60) { $0.body.text.contains(#"{"integerValue":"\#(commits)"}"#) }
            XCTAssertTrue(caughtUp)
            let events = snapshots(stream)
            XCTAssertTrue(events.contains { $0.data?.contains(#""reset":true"#) ?? false }, "no reset after \(events.count) events")
            XCTAssertLessThan(events.count, commits + 1, "every commit was queued for the slow reader")
            stream.disconnect()
            await waitUntil("the stream to end") { db.feed.subscriberCount == 0 }
        }
    }

    func testABareTreeStreamFollowsWritesAndItsCancelReturnsTheConnection() async throws {
        try await withServer(setup: .live) { client, backend in
            let port = try XCTUnwrap(client.port)
            let tree = backend.tree
            _ = try await tree.write(namespace: "loop", TreeWriteRequest(path: try TreePath(validating: "room/a"), operation: .set(.node(TreeNode(leaf: .int(1))))))
            let stream = try RawHTTPStream(port: port, path: "/room.json?ns=loop", headers: ["Accept: text/event-stream"])
            let first = await stream.read { $0.body.text.contains("\n\n") }
            XCTAssertTrue(first, stream.rawText)
            let head = try XCTUnwrap(stream.head)
            for field in ["Content-Type: text/event-stream; charset=utf-8", "Cache-Control: no-cache", "X-Accel-Buffering: no",
                          "Access-Control-Allow-Origin: *", "transfer-encoding: chunked"] {
                XCTAssertTrue(head.contains("\r\n\(field)"), "\(field) missing: \(head)")
            }
            let open = try await EventLoopListenTests.streamGauge(client, surface: "tree")
            XCTAssertTrue(open.hasSuffix(" 1.0") || open.hasSuffix(" 1"), open)
            _ = try await tree.write(namespace: "loop", TreeWriteRequest(path: try TreePath(validating: "room/b"), operation: .set(.node(TreeNode(leaf: .int(2))))))
            // A request pipelined behind the stream is answered once the stream ends.
            try stream.send("GET /room/b.json?ns=loop HTTP/1.1\r\nHost: x\r\n\r\n")
            await tree.cancelStreams(namespace: "loop", reason: "Permission denied")
            let ended = await stream.read { $0.body.ended && $0.rawText.hasSuffix("\r\n\r\n2") }
            XCTAssertTrue(ended, stream.rawText)
            XCTAssertEqual(stream.body.text, """
                event: put
                data: {"path":"/","data":{"a":1}}

                event: put
                data: {"path":"/b","data":2}

                event: cancel
                data: "Permission denied"


                """)
            for _ in 0..<500 where await tree.streamCounts().streams != 0 { try await Task.sleep(for: .milliseconds(10)) }
            let left = await tree.streamCounts().streams
            XCTAssertEqual(left, 0, "the namespace dropped the stream")
            let closed = try await EventLoopListenTests.streamGauge(client, surface: "tree")
            XCTAssertTrue(closed.hasSuffix(" 0.0") || closed.hasSuffix(" 0"), closed)
        }
    }

    func testATreeStreamEndsWhenItsClientHalfCloses() async throws {
        try await withServer(setup: .live) { client, backend in
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), path: "/room.json?ns=half", headers: ["Accept: text/event-stream"])
            let first = await stream.read { $0.body.text.contains("\n\n") }
            XCTAssertTrue(first, stream.rawText)
            let open = await backend.tree.streamCounts().streams
            XCTAssertEqual(open, 1)
            stream.halfClose()
            let ended = await stream.read { $0.body.ended }
            XCTAssertTrue(ended, "a half-closed stream gets its last chunk")
            for _ in 0..<500 where await backend.tree.streamCounts().streams != 0 { try await Task.sleep(for: .milliseconds(10)) }
            let left = await backend.tree.streamCounts().streams
            XCTAssertEqual(left, 0, "the namespace dropped the stream")
        }
    }
}
