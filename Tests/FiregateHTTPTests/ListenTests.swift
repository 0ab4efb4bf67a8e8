import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import FiregateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import XCTest

func setWrite(_ path: String, _ fields: [String: Value]) -> Write {
    Write(path: ResourcePath(path.split(separator: "/").map(String.init)), operation: .update(fields: fields, mask: nil))
}

func deleteWrite(_ path: String) -> Write {
    Write(path: ResourcePath(path.split(separator: "/").map(String.init)), operation: .delete)
}

let byN = #"{"from":[{"collectionId":"c"}],"orderBy":[{"field":{"fieldPath":"n"}}]}"#

/// The `change` member of a snapshot event, as the server writes it.
func changeJSON(_ type: String, _ old: Int, _ new: Int, _ document: Document) -> JSON {
    ["type": .string(type), "oldIndex": .int(Int64(old)), "newIndex": .int(Int64(new)), "document": document.json(database: testDB)]
}

final class ListenRequestTests: XCTestCase {
    func testInvalidListenRequestsFailBeforeTheStream() async throws {
        try await withServer { client, backend in
            assertError(try await client.send(.get, "\(base):listen?query=notjson"), 400, "INVALID_ARGUMENT", contains: "Invalid query parameter")
            assertError(try await client.send(.get, "\(base):listen?query=\(percentEncode(#"{"from":[]}"#))"), 400, "INVALID_ARGUMENT", contains: "exactly one collection")
            assertError(try await client.send(.get, "\(base)/c:listen?query=\(percentEncode(byN))"), 400, "INVALID_ARGUMENT", contains: "not a collection")
            assertError(try await client.send(.get, "\(base)/c:listen"), 400, "INVALID_ARGUMENT", contains: "listen needs a document path")
            assertError(try await client.send(.get, "\(base):listen"), 400, "INVALID_ARGUMENT", contains: "listen needs a document path")
            assertError(try await client.send(.post, "\(base):listen?query=\(percentEncode(byN))", #"{"structuredQuery":\#(byN)}"#), 400, "INVALID_ARGUMENT", contains: "not both")
            assertError(try await client.send(.post, "\(base):listen", "{nope"), 400, "INVALID_ARGUMENT", contains: "Invalid JSON payload")
            assertError(try await client.send(.get, "\(base)/c/d:listen?changesOnly=maybe"), 400, "INVALID_ARGUMENT", contains: "changesOnly")
            assertError(try await client.send(.delete, "\(base)/c/d:listen"), 404, "NOT_FOUND")
            XCTAssertEqual(backend.documents.database(testDB).feed.subscriberCount, 0, "no stream was opened")
        }
    }
}

/// The events of a stream so far, comments (keep-alives) left out.
func snapshots(_ stream: RawHTTPStream) -> [SSEEvent] { stream.events.map(SSEEvent.init).filter { !$0.isComment } }

func waitForEvents(_ stream: RawHTTPStream, _ count: Int, file: StaticString = #filePath, line: UInt = #line) async {
    let ok = await stream.read { s in snapshots(s).count >= count }
    XCTAssertTrue(ok, "expected \(count) events, got: \(stream.body.text)", file: file, line: line)
}

final class ListenStreamTests: XCTestCase {
    func testDocumentListen() async throws {
        try await withServer(setup: .live) { client, backend in
            let db = backend.documents.database(testDB)
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), path: "\(base)/c/d:listen", headers: ["Accept: text/event-stream"])
            await waitForEvents(stream, 1)
            let head = try XCTUnwrap(stream.head).lowercased()
            XCTAssertTrue(head.hasPrefix("http/1.1 200"), head)
            XCTAssertTrue(head.contains("content-type: text/event-stream; charset=utf-8"), head)
            XCTAssertTrue(head.contains("cache-control: no-cache"), head)
            XCTAssertTrue(head.contains("x-accel-buffering: no"), head)
            let first = snapshots(stream)[0]
            XCTAssertEqual(first.name, "snapshot")
            XCTAssertEqual(first.id, db.resumeToken(sequence: 0))
            let firstData = try JSONParser.parse(try XCTUnwrap(first.data))
            XCTAssertEqual(firstData.objectValue?.keys.elements, ["readTime", "exists"])
            XCTAssertEqual(firstData["exists"], false)

            let created = try await db.commit([setWrite("c/d", ["v": .integer(1)])])
            await waitForEvents(stream, 2)
            let document = try XCTUnwrap(try db.get(ResourcePath(["c", "d"])).value)
            let second = snapshots(stream)[1]
            XCTAssertEqual(second.id, db.resumeToken(sequence: 1))
            XCTAssertEqual(second.data, JSONWriter.string(["readTime": .string(created.commitTime.rfc3339), "exists": true, "document": document.json(database: testDB)]))

            _ = try await db.commit([setWrite("c/other", [:])])
            let deleted = try await db.commit([deleteWrite("c/d")])
            await waitForEvents(stream, 3)
            XCTAssertEqual(snapshots(stream)[2].data, JSONWriter.string(["readTime": .string(deleted.commitTime.rfc3339), "exists": false]))
            XCTAssertEqual(snapshots(stream)[2].id, db.resumeToken(sequence: 3), "the unrelated commit 2 sent nothing but moved the position")

            try await db.reset()
            let ended = await stream.read { $0.body.ended }
            XCTAssertTrue(ended, "the stream ends after the error: \(stream.body.text)")
            let last = try XCTUnwrap(snapshots(stream).last)
            XCTAssertEqual(last.name, "error")
            XCTAssertEqual(last.data, #"{"error":{"code":409,"message":"The database was reset.","status":"ABORTED"}}"#)
            XCTAssertEqual(snapshots(stream).count, 4)
        }
    }

    func testQueryListenChangesAndIndexes() async throws {
        try await withServer(setup: .live) { client, backend in
            let db = backend.documents.database(testDB)
            _ = try await db.commit([setWrite("c/a", ["n": .integer(1)]), setWrite("c/b", ["n": .integer(2)])])
            let port = try XCTUnwrap(client.port)
            let stream = try RawHTTPStream(port: port, path: "\(base):listen?query=\(percentEncode(#"{"structuredQuery":\#(byN)}"#))")
            await waitForEvents(stream, 1)
            func doc(_ id: String) throws -> Document { try XCTUnwrap(try db.get(ResourcePath(["c", id])).value) }
            let a = try doc("a"), b = try doc("b")
            let first = snapshots(stream)[0]
            let firstData = try JSONParser.parse(try XCTUnwrap(first.data))
            let readTime = try XCTUnwrap(firstData["readTime"])
            XCTAssertEqual(first.data, JSONWriter.string([
                "readTime": readTime, "documents": [a.json(database: testDB), b.json(database: testDB)],
                "changes": [changeJSON("added", -1, 0, a), changeJSON("added", -1, 1, b)],
            ]))
            XCTAssertEqual(first.id, db.resumeToken(sequence: 1))

            let moved = try await db.commit([setWrite("c/a", ["n": .integer(3)])])
            await waitForEvents(stream, 2)
            let a2 = try doc("a")
            XCTAssertEqual(snapshots(stream)[1].data, JSONWriter.string([
                "readTime": .string(moved.commitTime.rfc3339), "documents": [b.json(database: testDB), a2.json(database: testDB)],
                "changes": [changeJSON("modified", 0, 1, a2)],
            ]))

            _ = try await db.commit([setWrite("other/x", ["n": .integer(0)]), setWrite("c/a/sub/y", ["n": .integer(0)])])
            _ = try await db.commit([setWrite("c/c", ["n": .integer(0)]), deleteWrite("c/b")])
            await waitForEvents(stream, 3)
            let c = try doc("c")
            let third = try JSONParser.parse(try XCTUnwrap(snapshots(stream)[2].data))
            XCTAssertEqual(JSONWriter.string(third["changes"] ?? nil), JSONWriter.string([changeJSON("removed", 0, -1, b), changeJSON("added", -1, 0, c)]))
            XCTAssertEqual(JSONWriter.string(third["documents"] ?? nil), JSONWriter.string([c.json(database: testDB), a2.json(database: testDB)]))
            XCTAssertEqual(snapshots(stream)[2].id, db.resumeToken(sequence: 4))

            // Reconnecting with Last-Event-ID gets only what changed since that event.
            let resumed = try RawHTTPStream(port: port, path: "\(base):listen?query=\(percentEncode(byN))&changesOnly=true",
                                            headers: ["Last-Event-ID: \(try XCTUnwrap(first.id))"])
            await waitForEvents(resumed, 1)
            let resumedData = try JSONParser.parse(try XCTUnwrap(snapshots(resumed)[0].data))
            XCTAssertNil(resumedData["documents"], "changesOnly leaves the documents out")
            XCTAssertNil(resumedData["reset"])
            XCTAssertEqual(JSONWriter.string(resumedData["changes"] ?? nil),
                           JSONWriter.string([changeJSON("removed", 1, -1, b), changeJSON("added", -1, 0, c), changeJSON("modified", 1, 1, a2)]))
            XCTAssertEqual(snapshots(resumed)[0].id, db.resumeToken(sequence: 4))

            // An unknown or foreign token gets a full reset.
            let reset = try RawHTTPStream(port: port, path: "\(base):listen?query=\(percentEncode(byN))", headers: ["Last-Event-ID: zzz.1"])
            await waitForEvents(reset, 1)
            let resetData = try JSONParser.parse(try XCTUnwrap(snapshots(reset)[0].data))
            XCTAssertEqual(resetData["reset"], true)
            XCTAssertEqual(resetData["changes"]?.arrayValue?.map { $0["type"] }, ["added", "added"])

            try await db.reset()
            for s in [stream, resumed, reset] {
                let ended = await s.read { $0.body.ended }
                XCTAssertTrue(ended)
                XCTAssertEqual(snapshots(s).last?.name, "error")
            }
            await waitUntil("streams to unsubscribe") { db.feed.subscriberCount == 0 }
        }
    }

    func testPostListenUnderAParentDocument() async throws {
        try await withServer(setup: .live) { client, backend in
            let db = backend.documents.database(testDB)
            _ = try await db.commit([setWrite("p/1/c/x", ["n": .integer(1)]), setWrite("c/top", ["n": .integer(0)])])
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), method: "POST", path: "\(base)/p/1:listen",
                                           headers: ["Content-Type: text/plain"], body: #"{"structuredQuery":\#(byN)}"#)
            await waitForEvents(stream, 1)
            let data = try JSONParser.parse(try XCTUnwrap(snapshots(stream)[0].data))
            XCTAssertEqual(data["documents"]?.arrayValue?.compactMap { $0["name"]?.stringValue }, ["\(root)/p/1/c/x"])
            stream.disconnect()
        }
    }

    func testKeepAliveAndClientDisconnect() async throws {
        var options = ListenOptions()
        options.keepAliveSeconds = 0.05
        try await withServer(setup: .live, listen: options) { client, backend in
            let db = backend.documents.database(testDB)
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), path: "\(base)/c/d:listen")
            let gotKeepAlive = await stream.read { $0.body.text.contains("\n\n: keep-alive\n\n") }
            XCTAssertTrue(gotKeepAlive, stream.body.text)
            XCTAssertEqual(db.feed.subscriberCount, 1)
            stream.disconnect()
            // The next keep-alive write fails and the stream lets go of its subscription.
            await waitUntil("the stream to notice the client left") { db.feed.subscriberCount == 0 }
        }
    }
}

final class ListenLifecycleTests: XCTestCase {
    func testServerShutdownEndsOpenStreamsWithAnError() async throws {
        nonisolated(unsafe) var open: RawHTTPStream?
        try await withServer(setup: .live) { client, _ in
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), path: "\(base)/c/d:listen")
            await waitForEvents(stream, 1)
            open = stream
        }
        // withServer shut the server down gracefully with the stream still open.
        let stream = try XCTUnwrap(open)
        let ended = await stream.read { $0.body.ended }
        XCTAssertTrue(ended, "the stream must not hang: \(stream.body.text)")
        let last = try XCTUnwrap(snapshots(stream).last)
        XCTAssertEqual(last.name, "error")
        XCTAssertEqual(last.data, #"{"error":{"code":503,"message":"The server is shutting down.","status":"UNAVAILABLE"}}"#)
    }

    func testLastEventIDAsQueryParameter() async throws {
        try await withServer(setup: .live) { client, backend in
            let db = backend.documents.database(testDB)
            _ = try await db.commit([setWrite("c/d", ["v": .integer(1)])])
            let token = db.resumeToken(sequence: 1)
            _ = try await db.commit([setWrite("c/d", ["v": .integer(2)])])
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), path: "\(base):listen?query=\(percentEncode(#"{"from":[{"collectionId":"c"}]}"#))&lastEventId=\(token)")
            await waitForEvents(stream, 1)
            let data = try JSONParser.parse(try XCTUnwrap(snapshots(stream)[0].data))
            XCTAssertEqual(data["changes"]?.arrayValue?.map { $0["type"] }, ["modified"])
            stream.disconnect()
        }
    }

    /// End to end: a reader that stops reading while ~50 MB of frames would be due gets a reset
    /// (through the bounded feed, or socket backpressure on top of it), not every frame.
    func testSlowReaderOverHTTPIsResetNotSentEveryFrame() async throws {
        var options = ListenOptions()
        options.bufferLimit = 4
        options.keepAliveSeconds = 3600
        try await withServer(setup: .live, listen: options) { client, backend in
            let db = backend.documents.database(testDB)
            let query = #"{"from":[{"collectionId":"c"}],"orderBy":[{"field":{"fieldPath":"n"},"direction":"DESCENDING"}],"limit":1}"#
            let stream = try RawHTTPStream(port: try XCTUnwrap(client.port), path: "\(base):listen?changesOnly=true&query=\(percentEncode(query))")
            await waitForEvents(stream, 1)
            // The client stops reading; every commit changes the one-document window (~2 × 64 KB per frame).
            let payload = Value.string(String(repeating: "x", count: 64 * 1024))
            let commits = 400
            for n in 1...commits {
                _ = try await db.commit([setWrite("c/d\(n)", ["n": .integer(Int64(n)), "s": payload])])
            }
            // Now read everything: the stream must have fallen behind and been reset, not have queued every frame.
            let caughtUp = await stream.read(timeout: 60) { s in
                s.body.text.contains(#""newIndex":0,"document":{"name":"\#(root)/c/d\#(commits)""#)
            }
            XCTAssertTrue(caughtUp)
            let events = snapshots(stream)
            XCTAssertTrue(events.contains { $0.data?.contains(#""reset":true"#) ?? false }, "no reset after \(events.count) events")
            XCTAssertLessThan(events.count, commits + 1, "every commit was queued for the slow reader")
            stream.disconnect()
        }
    }
}

/// A response body writer that records frames and can hold writes, to drive a listen stream
/// deterministically (a slow reader, a client that goes away).
final class FrameLog: @unchecked Sendable {
    private let lock = NSLock()
    private var _frames: [String] = []
    private var _finished = false
    private var holding = false
    private var waiter: CheckedContinuation<Void, Never>?
    var failWrites = false

    var frames: [String] { lock.withLock { _frames } }
    var finished: Bool { lock.withLock { _finished } }
    /// Whether a write is parked at the gate.
    var blocked: Bool { lock.withLock { waiter != nil } }

    func hold() { lock.withLock { holding = true } }
    func release() {
        let w = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            holding = false
            defer { waiter = nil }
            return waiter
        }
        w?.resume()
    }

    func record(_ text: String) async throws {
        struct Gone: Error {}
        if lock.withLock({ failWrites }) { throw Gone() }
        await withCheckedContinuation { continuation in
            let pass = lock.withLock { () -> Bool in
                _frames.append(text)
                if holding { waiter = continuation; return false }
                return true
            }
            if pass { continuation.resume() }
        }
    }

    func finish() { lock.withLock { _finished = true } }
}

struct RecordingWriter: ResponseBodyWriter {
    let log: FrameLog
    mutating func write(_ buffer: ByteBuffer) async throws { try await log.record(String(buffer: buffer)) }
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws { log.finish() }
}

final class ListenStreamLogicTests: XCTestCase {
    func makeDatabase() async throws -> DocumentDatabase {
        try await Backend.inMemory().documents.database(testDB)
    }

    func run(_ body: @escaping @Sendable (inout any ResponseBodyWriter) async -> Void, log: FrameLog) -> Task<Void, Never> {
        Task {
            var writer: any ResponseBodyWriter = RecordingWriter(log: log)
            await body(&writer)
        }
    }

    func data(_ frame: String) -> JSON? {
        frame.split(separator: "\n").first { $0.hasPrefix("data: ") }.flatMap { try? JSONParser.parse(String($0.dropFirst(6))) }
    }

    func testSlowReaderGetsAFullResetInsteadOfAnUnboundedQueue() async throws {
        let db = try await makeDatabase()
        _ = try await db.commit([setWrite("c/a", ["n": .integer(1)])])
        var options = ListenOptions()
        options.bufferLimit = 2
        let query = Query(collectionID: "c", orderBy: [.init(field: try FieldPath.parse("n"))])
        let stream = QueryListenStream(database: db, query: query, options: options, ticker: KeepAliveTicker(seconds: 3600), frames: ListenFrameCache(),
                                       changesOnly: false, resumeAfter: nil, resuming: false, access: nil)
        let log = FrameLog()
        let task = run({ await stream.run(&$0) }, log: log)
        await waitUntil("the first snapshot") { log.frames.count == 1 }
        log.hold()
        _ = try await db.commit([setWrite("c/b", ["n": .integer(2)])])
        await waitUntil("the stream to block on its second frame") { log.blocked }
        for i in 3...6 { _ = try await db.commit([setWrite("c/d\(i)", ["n": .integer(Int64(i))])]) }
        log.release()
        await waitUntil("the reset frame") { log.frames.count == 3 }
        let frames = log.frames
        XCTAssertEqual(data(frames[1])?["changes"]?.arrayValue?.count, 1)
        let reset = try XCTUnwrap(data(frames[2]))
        XCTAssertEqual(reset["reset"], true)
        XCTAssertEqual(reset["changes"]?.arrayValue?.map { $0["type"] }, Array(repeating: "added", count: 6))
        XCTAssertEqual(reset["documents"]?.arrayValue?.count, 6)
        XCTAssertTrue(frames[2].contains("id: \(db.resumeToken(sequence: 6))\n"), frames[2])
        // The stream carries on normally after the reset.
        _ = try await db.commit([deleteWrite("c/a")])
        await waitUntil("the next change") { log.frames.count == 4 }
        XCTAssertEqual(data(log.frames[3])?["changes"]?.arrayValue?.map { $0["type"] }, ["removed"])
        try await db.reset()
        await task.value
        XCTAssertTrue(log.frames.last?.hasPrefix("event: error\n") ?? false)
        XCTAssertTrue(log.finished)
        XCTAssertEqual(db.feed.subscriberCount, 0)
    }

    func testWriteFailureEndsTheStreamAndUnsubscribes() async throws {
        let db = try await makeDatabase()
        let stream = DocumentListenStream(database: db, path: ResourcePath(["c", "d"]), options: ListenOptions(),
                                          ticker: KeepAliveTicker(seconds: 3600), frames: ListenFrameCache(), resumeAfter: nil, resuming: false)
        let log = FrameLog()
        let task = run({ await stream.run(&$0) }, log: log)
        await waitUntil("the first snapshot") { log.frames.count == 1 }
        XCTAssertEqual(db.feed.subscriberCount, 1)
        log.failWrites = true
        _ = try await db.commit([setWrite("c/d", [:])])
        await task.value
        XCTAssertEqual(db.feed.subscriberCount, 0)
        XCTAssertFalse(log.finished, "a gone client is not sent an end")
    }

    func testResumedDocumentListenSendsNothingUntilAChange() async throws {
        let db = try await makeDatabase()
        _ = try await db.commit([setWrite("c/d", ["v": .integer(1)])])
        let stream = DocumentListenStream(database: db, path: ResourcePath(["c", "d"]), options: ListenOptions(),
                                          ticker: KeepAliveTicker(seconds: 3600), frames: ListenFrameCache(), resumeAfter: 1, resuming: true)
        let log = FrameLog()
        let task = run({ await stream.run(&$0) }, log: log)
        await waitUntil("the stream to subscribe") { db.feed.subscriberCount == 1 }
        _ = try await db.commit([setWrite("c/d", ["v": .integer(2)])])
        await waitUntil("the change") { log.frames.count >= 1 }
        XCTAssertEqual(log.frames.count, 1)
        XCTAssertEqual(data(log.frames[0])?["document"]?["fields"]?["v"], ["integerValue": "2"])
        XCTAssertTrue(log.frames[0].contains("id: \(db.resumeToken(sequence: 2))\n"))
        try await db.reset()
        await task.value
    }

    func testFrameFormat() {
        let frame = ServerSentEvents.frame(event: "snapshot", id: "e.3", json: ["a": 1])
        XCTAssertEqual(String(buffer: frame), "event: snapshot\nid: e.3\ndata: {\"a\":1}\n\n")
        XCTAssertEqual(String(buffer: ServerSentEvents.frame(event: "error", json: nil)), "event: error\ndata: null\n\n")
        XCTAssertEqual(String(buffer: ServerSentEvents.keepAlive), ": keep-alive\n\n")
        // JSON never contains a raw newline, so one data line always holds the whole payload.
        XCTAssertFalse(String(buffer: ServerSentEvents.frame(event: "x", json: ["s": "a\nb\r\nc"])).dropLast(2).contains("\n\n"))
    }
}
