import FiregateBackend
import FiregateModel
import FiregateTestSupport
import XCTest

@testable import FiregateEdge

/// The write pipeline sends up to ten batches at once, as the SDK's write stream does, and the
/// backend still applies them in order and the client acknowledges them in order.
final class WritePipelineTests: XCTestCase {
    func testQueuedWritesAreAppliedAndAcknowledgedInOrder() async throws {
        let backend = try await Backend.inMemory(extraMigrations: EdgeClients.migrations)
        let client = EdgeClients(backend: backend).client("c1")
        await client.disableNetwork()
        let path = ResourcePath(["c", "x"])
        var ids: [Int64] = []
        // More than one pipeline's worth, all on one document: only the order makes the last win.
        for n in 0..<25 {
            let batch = try await client.write([Write(path: path, operation: .update(fields: ["n": .integer(Int64(n))], mask: nil))])
            ids.append(batch.id)
        }
        let stream = backend.operations.subscribe()
        await client.enableNetwork()
        for id in ids {
            let state = await client.waitForAck(id, timeoutMs: 10_000)
            guard case .acknowledged = state else { return XCTFail("write \(id) ended \(state)") }
        }
        let stored = try backend.documents.database(DatabaseID(project: "p")).get(path).value
        XCTAssertEqual(stored?.fields["n"], .integer(24))
        // Acknowledged in the order they were written.
        var acknowledged: [String] = []
        for await event in stream.events {
            if case .writeAcknowledged(_, let writeID) = event.detail { acknowledged.append(writeID) }
            if acknowledged.count == ids.count { break }
        }
        stream.finish()
        XCTAssertEqual(acknowledged, ids.map(String.init))
    }
}
