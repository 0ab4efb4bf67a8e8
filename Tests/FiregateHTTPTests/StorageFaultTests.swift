import FiregateModel
import HummingbirdTesting
import XCTest

@testable import FiregateHTTP

/// `PUT /clients/{id}/faults`: injected failures of a client's local persistence and the SDK's
/// recovery from them, through HTTP.
final class StorageFaultTests: XCTestCase {
    private static let docs = "/clients/A/v1/projects/p/databases/(default)/documents"
    private static let write = #"{"writes":[{"update":{"name":"projects/p/databases/(default)/documents/c/a","fields":{}}}]}"#

    func testRefusedListensAndWritesAreUnavailableAndLeaveNothingBehind() async throws {
        try await withServer { client, _ in
            var reply = try await client.send(.put, "/clients/A/faults", #"{"storage":["Locally write mutations","Allocate target"]}"#)
            XCTAssertEqual(reply.json?["storage"]?.arrayValue?.count, 2, reply.text)
            reply = try await client.send(.post, "\(Self.docs):commit", Self.write)
            XCTAssertEqual(reply.status, 503, reply.text)
            XCTAssertEqual(reply.errorStatus, "UNAVAILABLE")
            reply = try await client.send(.get, "\(Self.docs)/c/a:listen")
            XCTAssertEqual(reply.status, 503, reply.text)
            reply = try await client.send(.get, "/clients/A")
            XCTAssertEqual(reply.json?["pendingWrites"]?.integerLike, 0)
            XCTAssertEqual(reply.json?["listeners"]?.integerLike, 0)

            reply = try await client.send(.put, "/clients/A/faults", #"{"storage":false}"#)
            XCTAssertEqual(reply.json?["storage"]?.arrayValue?.count, 0, reply.text)
            reply = try await client.send(.post, "\(Self.docs):commit", Self.write)
            XCTAssertEqual(reply.status, 200, reply.text)

            reply = try await client.send(.put, "/clients/A/faults", #"{"storage":["Format the disk"]}"#)
            XCTAssertEqual(reply.status, 400, reply.text)
        }
    }

    func testAnAcknowledgementThatCannotBeStoredWaitsForTheRetryTimer() async throws {
        try await withServer { client, _ in
            _ = try await client.send(.put, "/clients/A/gates", #"{"scriptedWatch":true,"holdWrites":true}"#)
            var reply = try await client.send(.post, "\(Self.docs):commit", Self.write)
            let writeID = try XCTUnwrap(reply.headers[.init("Firegate-Write-Id")!])
            _ = try await client.send(.put, "/clients/A/faults", #"{"storage":["Acknowledge batch"]}"#)
            reply = try await client.send(.post, "/clients/A/gates:releaseWrite", #"{"commitTime":"1970-01-01T00:00:00.001Z"}"#)
            XCTAssertEqual(reply.status, 200, reply.text)
            reply = try await client.send(.get, "/clients/A/pendingWrites/\(writeID)")
            XCTAssertEqual(reply.json?["state"]?.stringValue, "pending", "the acknowledgement was not stored: \(reply.text)")
            reply = try await client.send(.get, "/clients/A/faults")
            XCTAssertEqual(reply.json?["recovering"]?.integerLike, 1, reply.text)
            // The network is down until the retry succeeds.
            reply = try await client.send(.post, "/clients/A/gates:releaseWrite", #"{"commitTime":"1970-01-01T00:00:00.002Z"}"#)
            XCTAssertEqual(reply.status, 412, reply.text)
            // A retry while the failure lasts changes nothing; after the heal it stores the ack.
            reply = try await client.send(.post, "/clients/A:runTimer", #"{"timer":"async_queue_retry"}"#)
            reply = try await client.send(.get, "/clients/A/pendingWrites/\(writeID)")
            XCTAssertEqual(reply.json?["state"]?.stringValue, "pending", reply.text)
            _ = try await client.send(.put, "/clients/A/faults", #"{"storage":[]}"#)
            reply = try await client.send(.post, "/clients/A:runTimer", #"{"timer":"async_queue_retry"}"#)
            XCTAssertEqual(reply.json?["ran"]?.arrayValue?.compactMap(\.stringValue), ["async_queue_retry"], reply.text)
            reply = try await client.send(.get, "/clients/A/pendingWrites/\(writeID)")
            XCTAssertEqual(reply.json?["state"]?.stringValue, "acknowledged", reply.text)
            reply = try await client.send(.get, "/clients/A/faults")
            XCTAssertEqual(reply.json?["recovering"]?.integerLike, 0, reply.text)
        }
    }
}
