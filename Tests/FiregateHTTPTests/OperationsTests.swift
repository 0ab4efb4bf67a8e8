import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import FiregateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import XCTest

/// The operations surface: clock, event log, metrics, reset, export/import, admin token,
/// gzip and the dashboard's files.
final class OperationsTests: XCTestCase {
    func testClockSetAdvanceAndRelease() async throws {
        try await withServer { client, _ in
            let wallReading = try await client.send(.get, "/emulator/v1/clock").json?["epochMs"]?.integerLike
            let wall = try XCTUnwrap(wallReading)
            XCTAssertLessThan(abs(wall - Int64(Date().timeIntervalSince1970 * 1000)), 5_000)

            let set = try await client.send(.post, "/emulator/v1/clock", #"{"time":"2031-05-01T12:00:00Z"}"#)
            XCTAssertEqual(set.json?["time"], "2031-05-01T12:00:00Z")
            XCTAssertEqual(set.json?["frozen"], true)
            // Commits and server timestamps follow the set clock, and never repeat a time.
            let commit = try await client.send(.post, "\(base):commit", #"{"writes":[{"update":{"name":"\#(root)/c/a","fields":{}},"updateTransforms":[{"fieldPath":"t","setToServerValue":"REQUEST_TIME"}]}]}"#)
            XCTAssertEqual(commit.json?["commitTime"], "2031-05-01T12:00:00Z", commit.text)
            XCTAssertEqual(commit.json?["writeResults"]?.arrayValue?.first?["transformResults"]?.arrayValue?.first, ["timestampValue": "2031-05-01T12:00:00Z"])
            let second = try await client.send(.post, "\(base):commit", #"{"writes":[{"update":{"name":"\#(root)/c/b","fields":{}}}]}"#)
            XCTAssertEqual(second.json?["commitTime"], "2031-05-01T12:00:00.000001Z")

            let advanced = try await client.send(.post, "/emulator/v1/clock", #"{"advanceMs":90000}"#)
            XCTAssertEqual(advanced.json?["time"], "2031-05-01T12:01:30Z")
            let tree = try await client.send(.put, "/t.json?ns=clock", #"{".sv":"timestamp"}"#)
            XCTAssertEqual(tree.text, "1935403290000")

            let released = try await client.send(.post, "/emulator/v1/clock", #"{"time":null}"#)
            XCTAssertEqual(released.json?["frozen"], false)
            XCTAssertLessThan(abs((released.json?["epochMs"]?.integerLike ?? 0) - Int64(Date().timeIntervalSince1970 * 1000)), 5_000)

            assertError(try await client.send(.post, "/emulator/v1/clock", #"{"advanceMs":-1}"#), 400, "INVALID_ARGUMENT", contains: "only moves forward")
            assertError(try await client.send(.post, "/emulator/v1/clock", #"{"time":"yesterday"}"#), 400, "INVALID_ARGUMENT", contains: "RFC 3339")
            assertError(try await client.send(.post, "/emulator/v1/clock", #"{"time":null,"advanceMs":1}"#), 400, "INVALID_ARGUMENT", contains: "either")
            assertError(try await client.send(.post, "/emulator/v1/clock", "[1]"), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.delete, "/emulator/v1/clock"), 404, "NOT_FOUND")
            // The clock stops at the last representable time.
            _ = try await client.send(.post, "/emulator/v1/clock", #"{"time":"9999-12-31T23:59:59Z"}"#)
            assertError(try await client.send(.post, "/emulator/v1/clock", #"{"advanceMs":1000}"#), 400, "INVALID_ARGUMENT", contains: "9999-12-31")
            let last = try await client.send(.get, "/emulator/v1/clock")
            XCTAssertEqual(last.json?["time"], "9999-12-31T23:59:59Z")
        }
    }

    func testScheduledWaitWakesWhenTheClockIsAdvanced() async throws {
        let clock = ServerClock()
        clock.set(toMicros: 1_000_000_000)
        let woke = expectation(description: "sleeper woke")
        let sleeper = Task {
            await clock.sleep(untilMicros: 1_000_000_000 + 300_000_000)  // 5 minutes of server time later
            woke.fulfill()
        }
        clock.advance(byMicros: 60_000_000)
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertFalse(sleeper.isCancelled)
        clock.advance(byMicros: 240_000_000)
        await fulfillment(of: [woke], timeout: 5)
        XCTAssertEqual(clock.readingMicros(), 1_300_000_000)
    }

    func testEventLogStreamsWhatHappened() async throws {
        try await withServer(setup: .live) { client, backend in
            _ = try await client.send(.put, "/before.json?ns=ops", "1")
            let port = try XCTUnwrap(client.port)
            let stream = try RawHTTPStream(port: port, path: "/emulator/v1/events?backlog=1", headers: ["Accept: text/event-stream"])
            await waitForEvents(stream, 1)
            XCTAssertTrue(snapshots(stream)[0].data?.contains(#""kind":"treeWrite","namespace":"ops","path":"/before""#) ?? false, stream.body.text)

            _ = try await client.send(.post, "\(base)/cities?documentId=SF", #"{"fields":{}}"#)
            _ = try await client.send(.post, "/clients/ops-a:disableNetwork")
            await waitForEvents(stream, 4)
            let kinds = snapshots(stream).compactMap { $0.data.flatMap { try? JSONParser.parse(Array($0.utf8)) }?["kind"]?.stringValue }
            XCTAssertEqual(kinds, ["treeWrite", "commit", "client", "network"])
            let commit = try JSONParser.parse(Array(snapshots(stream)[1].data!.utf8))
            XCTAssertEqual(commit["documents"], ["cities/SF"])
            XCTAssertEqual(commit["project"], "p")
            let network = try JSONParser.parse(Array(snapshots(stream)[3].data!.utf8))
            XCTAssertEqual(network["client"], "ops-a")
            XCTAssertEqual(network["online"], false)
            XCTAssertEqual(snapshots(stream).map(\.name), Array(repeating: "operation", count: 4))

            // Resuming after event 3 replays only what came later.
            let resumed = try RawHTTPStream(port: port, path: "/emulator/v1/events", headers: ["Last-Event-ID: \(snapshots(stream)[2].id!)"])
            await waitForEvents(resumed, 1)
            XCTAssertEqual(snapshots(resumed).first?.id, snapshots(stream)[3].id)
            XCTAssertEqual(backend.operations.subscriberCount, 2)
            stream.disconnect()
            resumed.disconnect()
            await waitUntil("subscriptions end with their clients") { backend.operations.subscriberCount == 0 }
            assertError(try await client.send(.get, "/emulator/v1/events", headers: [HTTPField.Name("Last-Event-ID")!: "x"]), 400, "INVALID_ARGUMENT")
        }
    }

    func testMetricsCountRequestsAndState() async throws {
        try await withServer { client, _ in
            for _ in 0..<3 { _ = try await client.send(.get, "\(base)/c/missing") }
            _ = try await client.send(.put, "/m.json?ns=metrics", "1")
            _ = try await client.send(.post, "/clients/m-1:disableNetwork")
            _ = try await client.send(.put, "/clients/m-2", "{}")
            let reply = try await client.send(.get, "/metrics")
            XCTAssertEqual(reply.status, 200)
            XCTAssertTrue(reply.headers[.contentType]?.hasPrefix("text/plain") ?? false)
            let text = reply.text
            XCTAssertTrue(text.contains(#"firegate_requests_total{surface="documents",method="GET",status="404"} 3"#), text)
            XCTAssertTrue(text.contains(#"firegate_requests_total{surface="tree",method="PUT",status="200"} 1"#), text)
            XCTAssertTrue(text.contains(#"firegate_request_duration_seconds_count{surface="documents"} 3"#), text)
            XCTAssertTrue(text.contains(#"firegate_commits_total{surface="tree"} 1"#), text)
            XCTAssertTrue(text.contains(#"firegate_clients{state="offline"} 1"#), text)
            XCTAssertTrue(text.contains(#"firegate_clients{state="online"} 1"#), text)
            XCTAssertTrue(text.contains("# TYPE firegate_sse_streams gauge"), text)
            // Cache counters keep what deleted clients counted.
            _ = try await client.send(.get, "/clients/m-1/v1/projects/p/databases/(default)/documents/c/none")
            let before = try await client.send(.get, "/metrics").text
            XCTAssertTrue(before.contains("firegate_client_cache_misses_total 1"), before)
            _ = try await client.send(.delete, "/clients/m-1")
            let after = try await client.send(.get, "/metrics").text
            XCTAssertTrue(after.contains("firegate_client_cache_misses_total 1"), after)
            // Counters only grow between scrapes.
            _ = try await client.send(.put, "/m.json?ns=metrics", "2")
            let countedAgain = try await client.send(.get, "/metrics").text.contains(#"firegate_commits_total{surface="tree"} 2"#)
            XCTAssertTrue(countedAgain)
        }
    }

    func testResetEndsOpenStreamsWithAnError() async throws {
        try await withServer(setup: .live) { client, backend in
            _ = try await client.send(.post, "\(base)/c?documentId=d", #"{"fields":{"n":{"integerValue":"1"}}}"#)
            _ = try await client.send(.put, "/a.json?ns=reset", #"{"b":1}"#)
            let port = try XCTUnwrap(client.port)
            let listen = try RawHTTPStream(port: port, path: "\(base)/c/d:listen", headers: ["Accept: text/event-stream"])
            await waitForEvents(listen, 1)
            let tree = try RawHTTPStream(port: port, path: "/a.json?ns=reset", headers: ["Accept: text/event-stream"])
            await waitForEvents(tree, 1)

            let reset = try await client.send(.post, "/emulator/v1/reset")
            XCTAssertEqual(reset.status, 200, reset.text)
            await waitForEvents(listen, 2)
            XCTAssertEqual(snapshots(listen).last?.name, "error")
            let listenEnded = await listen.read { $0.body.ended }
            XCTAssertTrue(listenEnded)
            let treeCancelled = await tree.read { s in snapshots(s).contains { $0.name == "cancel" } }
            XCTAssertTrue(treeCancelled, tree.body.text)
            let documentStatus = try await client.send(.get, "\(base)/c/d").status
            XCTAssertEqual(documentStatus, 404)
            let treeValue = try await client.send(.get, "/a.json?ns=reset").text
            XCTAssertEqual(treeValue, "null")
            XCTAssertEqual(backend.documents.database(testDB).documentCount, 0)
        }
    }

    func testExportResetImportRoundTrip() async throws {
        try await withServer { client, _ in
            _ = try await client.send(.post, "\(base)/c?documentId=d", #"{"fields":{"n":{"integerValue":"1"},"m":{"mapValue":{"fields":{"s":{"stringValue":"x"}}}}}}"#)
            _ = try await client.send(.post, "/v1/projects/other/databases/(default)/documents/k?documentId=v", #"{"fields":{}}"#)
            _ = try await client.send(.put, "/a.json?ns=archive", #"{"b":{".value":1,".priority":2},"c":[1,2]}"#)
            _ = try await client.send(.put, "/clients/arch", #"{"persistence":"memory"}"#)
            _ = try await client.send(.post, "/clients/arch:disableNetwork")
            _ = try await client.send(.put, "/clients/arch/indexes", #"{"indexes":[{"collectionGroup":"q","fields":[{"fieldPath":"x","order":"ASCENDING"}]}]}"#)
            _ = try await client.send(.patch, "/clients/arch/v1/projects/p/databases/(default)/documents/q/1", #"{"fields":{"x":{"integerValue":"5"}}}"#)
            let before = try await client.send(.get, "\(base)/c/d").text

            let exported = try await client.send(.post, "/emulator/v1/export", #"{"clients":true}"#)
            XCTAssertEqual(exported.status, 200)
            XCTAssertEqual(exported.json?["firegate"], "archive")
            let resetStatus = try await client.send(.post, "/emulator/v1/reset").status
            XCTAssertEqual(resetStatus, 200)
            let clientsAfterReset = try await client.send(.get, "/clients").json?["clients"]
            XCTAssertEqual(clientsAfterReset, [])

            let imported = try await client.send(.post, "/emulator/v1/import", exported.text)
            XCTAssertEqual(imported.json, ["documents": 2, "namespaces": 1, "clients": 1], imported.text)
            let restored = try await client.send(.get, "\(base)/c/d").text
            XCTAssertEqual(restored, before, "create and update times are kept")
            let restoredTree = try await client.send(.get, "/a.json?ns=archive&format=export").json
            XCTAssertEqual(restoredTree, #"{"b":{".value":1,".priority":2},"c":{"0":1,"1":2}}"#.json)
            let state = try await client.send(.get, "/clients/arch")
            XCTAssertEqual(state.json?["pendingWrites"], 1)
            XCTAssertEqual(state.json?["network"]?["online"], false)
            let cached = try await client.send(.get, "/clients/arch/v1/projects/p/databases/(default)/documents/q/1")
            XCTAssertEqual(cached.json?["fields"]?["x"], ["integerValue": "5"])
            XCTAssertEqual(cached.headers[HTTPField.Name("Firegate-Has-Pending-Writes")!], "true")
            let indexes = try await client.send(.get, "/clients/arch/indexes")
            XCTAssertEqual(indexes.json?["indexes"]?.arrayValue?.first?["collectionGroup"], "q", "index definitions travel with the client")

            let secondExport = try await client.send(.post, "/emulator/v1/export", #"{"clients":true}"#).json?.objectValue
            var again = try XCTUnwrap(secondExport)
            var first = try XCTUnwrap(exported.json?.objectValue)
            first.removeValue(forKey: "exportedAt")
            again.removeValue(forKey: "exportedAt")
            XCTAssertEqual(JSON.object(first), JSON.object(again), "a second export equals the first")
        }
    }

    func testDamagedArchivesAreRefusedAndChangeNothing() async throws {
        try await withServer { client, _ in
            _ = try await client.send(.post, "\(base)/c?documentId=d", #"{"fields":{}}"#)
            let exported = try await client.send(.get, "/emulator/v1/export").text
            _ = try await client.send(.post, "\(base)/c?documentId=e", #"{"fields":{}}"#)
            let gzip = Gzip.compress(Array(exported.utf8))
            let cases: [(String, String)] = [
                (String(exported.prefix(exported.count / 2)), "not valid JSON"),
                (#"{"hello":"world"}"#, "Not a Firegate archive"),
                (#"{"firegate":"archive","version":9}"#, "Unsupported archive version"),
                (#"{"firegate":"archive","version":1,"documents":[{"project":"p","database":"(default)","documents":[{"name":"nope"}]}]}"#, "documents[0].documents[0]"),
                (#"{"firegate":"archive","version":1,"tree":[{"namespace":"bad ns","value":1}]}"#, "Invalid namespace"),
                (#"{"firegate":"archive","version":1,"clients":[{"id":""}]}"#, "clients[0]"),
                (String(decoding: gzip.prefix(gzip.count - 9), as: UTF8.self), "not valid"),
            ]
            for (body, message) in cases {
                assertError(try await client.send(.post, "/emulator/v1/import", body), 400, "INVALID_ARGUMENT", contains: message)
            }
            let statusAfterRefusals = try await client.send(.get, "\(base)/c/e").status
            XCTAssertEqual(statusAfterRefusals, 200, "nothing changed")
            // The same archive gzip-compressed imports.
            let reply = try await client.execute(uri: "/emulator/v1/import", method: .post, body: ByteBuffer(bytes: gzip)) { $0.status }
            XCTAssertEqual(reply, .ok)
            let statusAfterImport = try await client.send(.get, "\(base)/c/e").status
            XCTAssertEqual(statusAfterImport, 404, "the import replaced the data")
        }
    }

    func testAdminTokenGuardsOperationsAndControlOnly() async throws {
        try await withServer(configure: { $0.adminToken = "t0ken" }) { client, _ in
            let bearer: HTTPFields = [.authorization: "Bearer t0ken"]
            assertError(try await client.send(.get, "/emulator/v1/clock"), 401, "UNAUTHENTICATED", contains: "admin token")
            assertError(try await client.send(.get, "/emulator/v1/clock", headers: [.authorization: "Bearer nope"]), 401, "UNAUTHENTICATED", contains: "wrong")
            let withHeader = try await client.send(.get, "/emulator/v1/clock", headers: bearer).status
            XCTAssertEqual(withHeader, 200)
            let withQuery = try await client.send(.get, "/emulator/v1/clock?admin_token=t0ken").status
            XCTAssertEqual(withQuery, 200)
            assertError(try await client.send(.post, "/clients/x:disableNetwork"), 401, "UNAUTHENTICATED")
            assertError(try await client.send(.get, "/clients"), 401, "UNAUTHENTICATED")
            assertError(try await client.send(.put, "/clients/x/gates", "{}"), 401, "UNAUTHENTICATED")
            assertError(try await client.send(.post, "/emulator/v1/projects/p/databases/(default):bundle", #"{"bundleId":"b"}"#), 401, "UNAUTHENTICATED")
            // Data routes, the SDK's own bundle calls, health and metrics never need it.
            assertError(try await client.send(.post, "/clients/x:loadBundle", "12x"), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.get, "/clients/x/namedQueries/q"), 404, "NOT_FOUND")
            let clientData = try await client.send(.get, "/clients/x/v1/projects/p/databases/(default)/documents/c/d").status
            XCTAssertEqual(clientData, 404)
            let documentData = try await client.send(.get, "\(base)/c/d").status
            XCTAssertEqual(documentData, 404)
            let treeData = try await client.send(.get, "/a.json").status
            XCTAssertEqual(treeData, 200)
            let health = try await client.send(.get, "/healthz").status
            XCTAssertEqual(health, 200)
            let metrics = try await client.send(.get, "/metrics").status
            XCTAssertEqual(metrics, 200)
        }
    }

    func testLargeAnswersAreGzippedForClientsThatAcceptIt() async throws {
        try await withServer { client, _ in
            var writes: [String] = []
            for i in 0..<40 { writes.append(#"{"update":{"name":"\#(root)/g/d\#(i)","fields":{"s":{"stringValue":"some text to compress \#(i)"}}}}"#) }
            _ = try await client.send(.post, "\(base):commit", #"{"writes":[\#(writes.joined(separator: ","))]}"#)
            let plain = try await client.send(.get, "\(base)/g?pageSize=100")
            XCTAssertNil(plain.headers[.contentEncoding])
            let compressed = try await client.execute(uri: "\(base)/g?pageSize=100", method: .get, headers: [.acceptEncoding: "gzip, deflate"]) { $0 }
            XCTAssertEqual(compressed.headers[.contentEncoding], "gzip")
            XCTAssertEqual(compressed.headers[.vary], "Accept-Encoding")
            let bytes = Array(compressed.body.readableBytesView)
            XCTAssertLessThan(bytes.count, plain.text.utf8.count / 2)
            XCTAssertEqual(Gzip.decompress(bytes, limit: 1 << 20).map { String(decoding: $0, as: UTF8.self) }, plain.text)
            let refused = try await client.execute(uri: "\(base)/g?pageSize=100", method: .get, headers: [.acceptEncoding: "gzip;q=0"]) { $0 }
            XCTAssertNil(refused.headers[.contentEncoding])
        }
    }

    func testDashboardFilesAreServedWithValidators() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("firegate-public-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("<!doctype html><title>Firegate</title>".utf8).write(to: folder.appendingPathComponent("index.html"))
        try Data("body{}".utf8).write(to: folder.appendingPathComponent("app.css"))
        try await withServer(configure: { $0.publicDirectory = folder.path }) { client, _ in
            let index = try await client.send(.get, "/")
            XCTAssertEqual(index.status, 200)
            XCTAssertTrue(index.text.contains("<title>Firegate</title>"))
            XCTAssertEqual(index.headers[.cacheControl], "no-cache")
            let css = try await client.send(.get, "/app.css")
            XCTAssertEqual(css.headers[.contentType], "text/css")
            let etag = try XCTUnwrap(css.headers[.eTag])
            let revalidated = try await client.send(.get, "/app.css", headers: [.ifNoneMatch: etag]).status
            XCTAssertEqual(revalidated, 304)
            assertError(try await client.send(.get, "/missing.js"), 404, "NOT_FOUND")
            assertError(try await client.send(.post, "/"), 404, "NOT_FOUND")
        }
    }
}

private extension String {
    var json: JSON? { try? JSONParser.parse(Array(utf8)) }
}
