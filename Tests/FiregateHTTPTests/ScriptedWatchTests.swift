import FiregateModel
import HummingbirdTesting
import XCTest

@testable import FiregateHTTP

/// Scripted watch (`PUT /clients/{id}/gates {"scriptedWatch":true}`, `POST /clients/{id}/watch`)
/// over a real socket: the test says what watch tells the client, as the SDK's spec tests do.
private let docs = "/clients/A/v1/projects/p/databases/(default)/documents"

final class ScriptedWatchTests: XCTestCase {
    private static func watch(_ client: any TestClientProtocol, _ body: String, expect status: Int = 200) async throws -> Reply {
        let reply = try await client.send(.post, "/clients/A/watch", body)
        XCTAssertEqual(reply.status, status, reply.text)
        return reply
    }

    /// The snapshot events a stream got up to a fresh sync marker: (fromCache, document keys).
    private static func snapshots(_ client: any TestClientProtocol, _ stream: RawHTTPStream, marker: String) async throws -> [(fromCache: Bool, keys: [String])] {
        _ = try await client.send(.post, "/clients/A/gates:sync", #"{"token":"\#(marker)"}"#)
        let arrived = await stream.read { $0.body.text.contains(marker) }
        XCTAssertTrue(arrived, stream.body.text)
        var result: [(Bool, [String])] = []
        // Events between the previous marker and this one.
        let all = stream.events
        guard let end = all.firstIndex(where: { $0.contains { $0.contains(marker) } }) else { return [] }
        let start = all[..<end].lastIndex(where: { $0.contains("event: sync") }).map { $0 + 1 } ?? 0
        for event in all[start..<end] where event.contains("event: snapshot") {
            guard let data = event.first(where: { $0.hasPrefix("data: ") }), let json = try? JSONParser.parse(String(data.dropFirst(6))) else { continue }
            let keys = json["documents"]?.arrayValue?.compactMap { $0["name"]?.stringValue?.components(separatedBy: "/documents/").last } ?? []
            result.append((json["metadata"]?["fromCache"]?.boolValue ?? false, keys))
        }
        return result
    }

    func testListenLimboAndExistenceFilterFollowTheScript() async throws {
        try await withServer(setup: .live) { client, _ in
            let port = try XCTUnwrap(client.port)
            _ = try await client.send(.put, "/clients/A", #"{"project":"p","persistence":"memory"}"#)
            var reply = try await client.send(.put, "/clients/A/gates", #"{"scriptedWatch":true,"holdWrites":true}"#)
            XCTAssertEqual(reply.json?["scriptedWatch"]?.boolValue, true, reply.text)
            let stream = try RawHTTPStream(port: port, path: "\(docs):listen?includeMetadataChanges=true&query=" + percentEncode(#"{"from":[{"collectionId":"c"}]}"#))
            let registered = await stream.read { $0.head != nil }
            XCTAssertTrue(registered)
            // The listen asks watch for target 2; nothing is shown before watch answers.
            reply = try await client.send(.get, "/clients/A")
            XCTAssertEqual(reply.json?["watch"]?["targets"]?.arrayValue?.compactMap { $0["targetId"]?.integerLike }, [2], reply.text)
            var events = try await Self.snapshots(client, stream, marker: "m1")
            XCTAssertEqual(events.count, 0)

            // ack, a document, CURRENT, then a consistent snapshot: one event from the server.
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"ADD","targetIds":[2]}}"#)
            _ = try await Self.watch(client, #"{"documentChange":{"document":{"name":"projects/p/databases/(default)/documents/c/a","fields":{"v":{"integerValue":"1"}},"createTime":"1970-01-01T00:00:00.001Z","updateTime":"1970-01-01T00:00:00.001Z"},"targetIds":[2]}}"#)
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"CURRENT","targetIds":[2],"resumeToken":"token-1"}}"#)
            events = try await Self.snapshots(client, stream, marker: "m2")
            XCTAssertEqual(events.count, 0, "nothing before the snapshot")
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"NO_CHANGE","readTime":"1970-01-01T00:00:00.001Z"}}"#)
            events = try await Self.snapshots(client, stream, marker: "m3")
            XCTAssertEqual(events.map(\.fromCache), [false])
            XCTAssertEqual(events.first?.keys, ["c/a"])

            // Watch says the document left the target: the view still shows it, in limbo, so the
            // snapshot is from cache and a lookup target (1) asks for the document.
            _ = try await Self.watch(client, #"{"documentRemove":{"document":"projects/p/databases/(default)/documents/c/a","removedTargetIds":[2]}}"#)
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"NO_CHANGE","readTime":"1970-01-01T00:00:00.002Z"}}"#)
            events = try await Self.snapshots(client, stream, marker: "m4")
            XCTAssertEqual(events.map(\.fromCache), [true])
            reply = try await client.send(.get, "/clients/A")
            let state = try XCTUnwrap(reply.json?["watch"])
            XCTAssertEqual(state["limboDocuments"]?.arrayValue?.compactMap(\.stringValue), ["projects/p/databases/(default)/documents/c/a"])
            let lookup = state["targets"]?.arrayValue?.first { $0["targetId"]?.integerLike == 1 }
            XCTAssertEqual(lookup?["purpose"]?.stringValue, "TargetPurposeLimboResolution", reply.text)

            // The lookup finds nothing: the document is deleted and the view is in sync again.
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"ADD","targetIds":[1]}}"#)
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"CURRENT","targetIds":[1],"resumeToken":"token-3"}}"#)
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"NO_CHANGE","readTime":"1970-01-01T00:00:00.003Z"}}"#)
            events = try await Self.snapshots(client, stream, marker: "m5")
            XCTAssertEqual(events.map(\.fromCache), [false])
            XCTAssertEqual(events.first?.keys, [])
            reply = try await client.send(.get, "/clients/A")
            XCTAssertEqual(reply.json?["watch"]?["limboDocuments"]?.arrayValue?.count, 0, reply.text)

            // An existence filter that disagrees (1 document, the client holds 0 + b): the target
            // is listened to again from scratch, marked as a mismatch, without its token.
            _ = try await Self.watch(client, #"{"documentChange":{"document":{"name":"projects/p/databases/(default)/documents/c/b","fields":{},"createTime":"1970-01-01T00:00:00.004Z","updateTime":"1970-01-01T00:00:00.004Z"},"targetIds":[2]}}"#)
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"NO_CHANGE","readTime":"1970-01-01T00:00:00.004Z"}}"#)
            _ = try await Self.watch(client, #"{"filter":{"targetId":2,"count":2}}"#)
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"NO_CHANGE","readTime":"1970-01-01T00:00:00.005Z"}}"#)
            events = try await Self.snapshots(client, stream, marker: "m6")
            XCTAssertEqual(events.last?.fromCache, true)
            reply = try await client.send(.get, "/clients/A")
            let relisten = reply.json?["watch"]?["targets"]?.arrayValue?.first { $0["targetId"]?.integerLike == 2 }
            XCTAssertEqual(relisten?["purpose"]?.stringValue, "TargetPurposeExistenceFilterMismatch", reply.text)
            XCTAssertEqual(relisten?["resumeToken"]?.stringValue, "")

            // Watch refuses the target: the listener gets the error and its stream ends.
            _ = try await Self.watch(client, #"{"targetChange":{"targetChangeType":"REMOVE","targetIds":[2],"cause":{"code":7,"message":"Missing or insufficient permissions."}}}"#)
            let ended = await stream.read { $0.body.ended }
            XCTAssertTrue(ended)
            XCTAssertTrue(stream.body.text.contains("PERMISSION_DENIED"), stream.body.text)
            stream.disconnect()
        }
    }

    func testWritesAcknowledgedByTheScriptNeverReachTheBackend() async throws {
        try await withServer(setup: .live) { client, _ in
            _ = try await client.send(.put, "/clients/A/gates", #"{"scriptedWatch":true,"holdWrites":true}"#)
            var reply = try await client.send(.post, "\(docs):commit", #"{"writes":[{"update":{"name":"projects/p/databases/(default)/documents/c/w","fields":{"n":{"integerValue":"1"}}}}]}"#)
            XCTAssertEqual(reply.status, 200, reply.text)
            let writeID = try XCTUnwrap(reply.headers[.init("Firegate-Write-Id")!])
            reply = try await client.send(.post, "/clients/A/gates:releaseWrite", #"{"count":1,"commitTime":"1970-01-01T00:00:00.002Z"}"#)
            XCTAssertEqual(reply.status, 200, reply.text)
            reply = try await client.send(.get, "/clients/A/pendingWrites/\(writeID)")
            XCTAssertEqual(reply.json?["state"]?.stringValue, "acknowledged", reply.text)
            reply = try await client.send(.get, "\(base)/c/w")
            XCTAssertEqual(reply.status, 404, "the backend never saw it: \(reply.text)")
        }
    }

    func testBadScriptsAreRefusedWithAClearError() async throws {
        try await withServer(setup: .live) { client, _ in
            var reply = try await client.send(.post, "/clients/A/watch", #"{"targetChange":{"targetChangeType":"ADD","targetIds":[2]}}"#)
            XCTAssertEqual(reply.status, 412, reply.text)
            XCTAssertTrue(reply.errorMessage?.contains("scriptedWatch") ?? false, reply.text)

            _ = try await client.send(.put, "/clients/A/gates", #"{"scriptedWatch":true}"#)
            reply = try await client.send(.post, "/clients/A/watch", #"{"targetChange":{"targetChangeType":"ADD","targetIds":[2]}}"#)
            XCTAssertEqual(reply.status, 412, "no stream without a listen: \(reply.text)")

            let port = try XCTUnwrap(client.port)
            let stream = try RawHTTPStream(port: port, path: "\(docs)/c/d:listen")
            let registered = await stream.read { $0.head != nil }
            XCTAssertTrue(registered)
            for (body, status) in [
                (#"{"bogus":{}}"#, 400),
                (#"{"targetChange":{"targetChangeType":"MAYBE"}}"#, 400),
                (#"{"documentChange":{"document":{"name":"c/x"},"targetIds":[2]}}"#, 400),
                (#"{"filter":{"count":1}}"#, 400),
                (#"{"targetChange":{"targetChangeType":"NO_CHANGE","readTime":"yesterday"}}"#, 400),
                (#"{"targetChange":{"targetChangeType":"ADD","targetIds":[2,2]}}"#, 412),
                // A target the stream never asked for is ignored, as the SDK does.
                (#"{"targetChange":{"targetChangeType":"ADD","targetIds":[4]}}"#, 200),
            ] {
                reply = try await client.send(.post, "/clients/A/watch", body)
                XCTAssertEqual(reply.status, status, "\(body): \(reply.text)")
                if status != 200 { XCTAssertNotNil(reply.errorMessage, reply.text) }
            }
            // The refused ones changed nothing: the real ack is still awaited.
            reply = try await client.send(.post, "/clients/A/watch", #"{"targetChange":{"targetChangeType":"ADD","targetIds":[2]}}"#)
            XCTAssertEqual(reply.status, 200, reply.text)
            reply = try await client.send(.post, "/clients/A/gates:releaseWrite", #"{"commitTime":"soon"}"#)
            XCTAssertEqual(reply.status, 400, reply.text)
            stream.disconnect()
        }
    }

    func testTimersFireOnDemand() async throws {
        try await withServer(setup: .live) { client, _ in
            let port = try XCTUnwrap(client.port)
            _ = try await client.send(.put, "/clients/A/gates", #"{"scriptedWatch":true}"#)
            let stream = try RawHTTPStream(port: port, path: "\(docs):listen?query=" + percentEncode(#"{"from":[{"collectionId":"c"}]}"#))
            let registered = await stream.read { $0.head != nil }
            XCTAssertTrue(registered)
            var events = try await Self.snapshots(client, stream, marker: "t1")
            XCTAssertEqual(events.count, 0, "an empty listen waits for watch while the state is unknown")
            // Watch said nothing for the online-state timeout: offline, so the cache's answer is raised.
            var reply = try await client.send(.post, "/clients/A:runTimer", #"{"timer":"online_state_timeout"}"#)
            XCTAssertEqual(reply.json?["ran"]?.arrayValue?.compactMap(\.stringValue), ["online_state_timeout"], reply.text)
            events = try await Self.snapshots(client, stream, marker: "t2")
            XCTAssertEqual(events.map(\.fromCache), [true])
            reply = try await client.send(.post, "/clients/A:runTimer", #"{"timer":"all"}"#)
            XCTAssertEqual(reply.json?["ran"]?.arrayValue?.compactMap(\.stringValue), ["lru_garbage_collection"],
                           "nothing else pending but the LRU pass a started client always has: \(reply.text)")
            // A stream failure awaiting its backoff opens again when the backoff timer runs.
            _ = try await Self.watch(client, #"{"streamClose":{"error":{"code":14,"message":"down"},"reconnect":false}}"#)
            reply = try await client.send(.get, "/clients/A")
            XCTAssertEqual(reply.json?["watch"]?["stream"]?.stringValue, "awaitingBackoff", reply.text)
            reply = try await client.send(.post, "/clients/A:runTimer", #"{"timer":"listen_stream_connection_backoff"}"#)
            XCTAssertEqual(reply.json?["ran"]?.arrayValue?.compactMap(\.stringValue), ["listen_stream_connection_backoff"], reply.text)
            reply = try await client.send(.post, "/clients/A:runTimer", #"{"timer":"someday"}"#)
            XCTAssertEqual(reply.status, 400, reply.text)
            stream.disconnect()
        }
    }
}
