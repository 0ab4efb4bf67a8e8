import FiregateModel
@testable import FiregatePostgres
import FiregateStore
import XCTest

/// The fence on edge caches (docs/replicas.md): a replica that lost an edge client to another writes
/// nothing more of its cache, even before its next renewal tells it so.
final class EdgeClientFenceTests: XCTestCase {
    func testAReplicaThatLostAClientWritesNothingOfItsCache() async throws {
        let database = try TestDatabase()
        let a = try database.store("a", leaseSeconds: 2), b = try database.store("b", leaseSeconds: 2)
        defer { a.close(); b.close() }
        XCTAssertNil(try a.claimClient("phone"))
        let onA = EdgeCacheStorage(store: a, clientID: "phone"), onB = EdgeCacheStorage(store: b, clientID: "phone")
        let first = await save(onA, batch: 1)
        XCTAssertNil(status(first), "the owner writes")
        // A stops renewing as if paused; B takes the client over (epoch 2) before A hears of it.
        try database.sql("UPDATE fg_replicas SET heartbeat_at = now() - interval '1 minute' WHERE replica = 'a'")
        XCTAssertNil(try b.claimClient("phone"))
        XCTAssertEqual(try database.sql("SELECT replica, epoch::text FROM fg_client_owner"), [["b", "2"]])
        let stale = await save(onA, batch: 2), owner = await save(onB, batch: 3)
        XCTAssertEqual(status(stale), .unavailable, "the stale replica is fenced off")
        XCTAssertNil(status(owner), "the new owner writes")
        XCTAssertEqual(try database.sql("SELECT batch_id::text FROM fg_edge_mutations ORDER BY batch_id"), [["1"], ["3"]])
        // A client nobody claimed is written as on a store of one process.
        let unclaimed = await save(EdgeCacheStorage(store: a, clientID: "unclaimed"), batch: 4)
        XCTAssertNil(status(unclaimed))
    }

    private func status(_ result: Result<Void, any Error>) -> Status? {
        if case .failure(let error) = result { return (error as? FiregateError)?.status ?? .unknown }
        return nil
    }

    private func save(_ cache: EdgeCacheStorage, batch: Int64) async -> Result<Void, any Error> {
        await withCheckedContinuation { continuation in
            cache.saveMutation(id: batch, localWriteTime: Timestamp(microseconds: batch), writes: .array([]), uid: "u") { continuation.resume(returning: $0) }
        }
    }
}
