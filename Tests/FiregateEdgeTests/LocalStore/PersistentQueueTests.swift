import FiregateBackend
import FiregateModel
import FiregateStore
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

    /// Writes arriving one after another while the pipeline sends: a batch may be sent before
    /// its save reached the disk, and its removal must still come after that save. Sixteen
    /// clients at once make the race likely (half the runs left a batch on disk before the fix).
    func testWritesWhileSendingLeaveNoAcknowledgedBatchOnDisk() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("edge-queue-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let backend = try await Backend(directory: directory, defaultProject: "p", extraMigrations: EdgeClients.migrations)
        let clients = EdgeClients(backend: backend)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for c in 0..<16 {
                group.addTask {
                    let client = clients.client("w\(c)")
                    try await client.configure(["persistence": "persistent"])
                    var last: Int64 = 0
                    for n in 0..<200 {
                        let path = ResourcePath(["c", "w\(c)-\(n)"])
                        last = try await client.write([Write(path: path, operation: .update(fields: ["n": .integer(Int64(n))], mask: nil))]).id
                    }
                    guard case .acknowledged = await client.waitForAck(last, timeoutMs: 30_000) else { throw CancellationError() }
                }
            }
            try await group.waitForAll()
        }
        try await EdgeCacheStorage(store: backend.store, clientID: "w0").flush()
        let left = try await backend.store.writer.read { db in
            try String.fetchAll(db, sql: "SELECT client_id || ':' || batch_id FROM edge_mutations")
        }
        XCTAssertEqual(left, [], "acknowledged batches still queued on disk: sent again after a restart")
    }
}
