import FiregateBackend
import FiregateModel
import Foundation
import GRDB
import XCTest

@testable import FiregateEdge

/// A persistent client's acknowledged batch leaves its on-disk queue in the transaction of the
/// backend commit that applied it, so a crash cannot leave it both committed and queued.
final class PersistentQueueTests: XCTestCase {
    func testAnAcknowledgedBatchIsNoLongerStoredWhenItsAckArrives() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("edge-queue-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = try await Backend(directory: directory, defaultProject: "p", extraMigrations: EdgeClients.migrations)
        let client = EdgeClients(backend: backend).client("c1")
        try await client.configure(["persistence": "persistent"])
        func queuedOnDisk() throws -> [Int64] {
            try backend.store.writer.read { db in
                try Int64.fetchAll(db, sql: "SELECT batch_id FROM edge_mutations WHERE client_id = 'c1'")
            }
        }
        for n in 0..<30 {
            let path = ResourcePath(["c", "d\(n)"])
            let batch = try await client.write([Write(path: path, operation: .update(fields: ["n": .integer(Int64(n))], mask: nil))])
            guard case .acknowledged = await client.waitForAck(batch.id, timeoutMs: 10_000) else { return XCTFail("write \(n) not acknowledged") }
            // No flush: the removal must already be on disk, with the commit.
            XCTAssertEqual(try queuedOnDisk(), [], "write \(n) is still queued on disk after its acknowledgement")
            XCTAssertNotNil(try backend.documents.database(DatabaseID(project: "p")).get(path).value)
        }
    }
}
