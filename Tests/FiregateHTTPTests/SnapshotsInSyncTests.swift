import FiregateModel
import XCTest

@testable import FiregateHTTP

/// `GET /clients/{id}/snapshotsInSync`: the SDK's onSnapshotsInSync, over a real socket.
final class SnapshotsInSyncTests: XCTestCase {
    func testObserversHearOnceAtOnceThenAfterEveryChangeThatRaisedASnapshot() async throws {
        try await withServer(setup: .live) { client, _ in
            let port = try XCTUnwrap(client.port)
            let docs = "/clients/A/v1/projects/p/databases/(default)/documents"
            let observer = try RawHTTPStream(port: port, path: "/clients/A/snapshotsInSync")
            var marker = 0
            // The event names the observer got up to a fresh `gates:sync` marker.
            func namesUntilSync() async throws -> [String] {
                marker += 1
                let token = "m\(marker)"
                _ = try await client.send(.post, "/clients/A/gates:sync", #"{"token":"\#(token)"}"#)
                let arrived = await observer.read { $0.body.text.contains(token) }
                XCTAssertTrue(arrived, observer.body.text)
                let names = observer.events.compactMap { $0.first { $0.hasPrefix("event: ") }.map { String($0.dropFirst(7)) } }
                // The stream ends with this marker: what came since the one before is this step's.
                let segments = names.split(separator: "sync", omittingEmptySubsequences: false)
                return segments.count >= 2 ? Array(segments[segments.count - 2]) : []
            }
            // The first event says the observer is registered (markers before it would miss it).
            let added = await observer.read { $0.body.text.contains("event: snapshotsInSync") }
            XCTAssertTrue(added, "one event as soon as it is added")
            var names = try await namesUntilSync()
            XCTAssertEqual(names, ["snapshotsInSync"])

            // No listener: a write raises no snapshot, so nothing.
            _ = try await client.send(.patch, "\(docs)/c/a", #"{"fields":{"n":{"integerValue":"1"}}}"#)
            names = try await namesUntilSync()
            XCTAssertEqual(names, [])

            // A listener's first snapshot, then a local write it shows: one event each.
            let listener = try RawHTTPStream(port: port, path: "\(docs):listen?query=" + percentEncode(#"{"from":[{"collectionId":"c"}]}"#))
            let first = await listener.read { $0.body.text.contains("event: snapshot") }
            XCTAssertTrue(first)
            names = try await namesUntilSync()
            XCTAssertEqual(names, ["snapshotsInSync"])
            _ = try await client.send(.patch, "\(docs)/c/b", #"{"fields":{"n":{"integerValue":"2"}}}"#)
            names = try await namesUntilSync()
            XCTAssertEqual(names, ["snapshotsInSync"])
            listener.disconnect()
        }
    }
}
