import FiregateModel
import FiregateStore
import Foundation
import GRDB
import XCTest

/// A persistent client's targets on disk: a position update writes only the keys that moved,
/// and data written before keys had rows of their own keeps them.
final class EdgeCacheStorageTests: XCTestCase {
    func path(_ id: String) -> ResourcePath { ResourcePath(["c", id]) }

    func target(_ storage: EdgeCacheStorage, _ query: String) throws -> EdgeCacheStorage.StoredTarget? {
        try storage.load()?.targets.first { $0.query == query }
    }

    func testAPositionUpdateWritesTheKeysThatJoinedAndLeft() async throws {
        let store = try SQLiteStore.inMemory(migrations: EdgeCacheStorage.migrations)
        let storage = EdgeCacheStorage(store: store, clientID: "c1")
        storage.saveSettings(["persistence": "persistent"])
        storage.saveTarget(.init(query: "q", sequenceNumber: 1, synced: true, documents: [path("a"), path("b"), path("c")], targetID: 2))
        let position = EdgeCacheStorage.StoredTarget.Position(query: "q", sequenceNumber: 5, synced: true, targetID: 2, resumeToken: "t5",
                                                              snapshotVersion: Timestamp(microseconds: 5_000_000))
        storage.saveTargetPosition(position, joined: [path("d")], left: [path("a")]) { XCTFail("the stored target's keys are not written again"); return [] }
        try await storage.flush()
        let saved = try XCTUnwrap(try target(storage, "q"))
        XCTAssertEqual(Set(saved.documents), [path("b"), path("c"), path("d")])
        XCTAssertEqual(saved.sequenceNumber, 5)
        XCTAssertEqual(saved.resumeToken, "t5")
        XCTAssertEqual(saved.snapshotVersion, Timestamp(microseconds: 5_000_000))

        // A target never saved whole gets its row and all its keys.
        let all = [path("x"), path("y")]
        storage.saveTargetPosition(.init(query: "r", sequenceNumber: 6, synced: false, targetID: 4, resumeToken: "", snapshotVersion: .zero),
                                   joined: [path("x")]) { all }
        // Saving whole replaces the keys; deleting a target deletes them.
        storage.saveTarget(.init(query: "q", sequenceNumber: 7, synced: true, documents: [path("e")]))
        try await storage.flush()
        XCTAssertEqual(Set(try XCTUnwrap(try target(storage, "r")).documents), [path("x"), path("y")])
        XCTAssertEqual(try XCTUnwrap(try target(storage, "q")).documents, [path("e")])
        storage.deleteTargets(["q"])
        try await storage.flush()
        XCTAssertNil(try target(storage, "q"))
        let keysLeft = try await store.writer.read { db in try String.fetchAll(db, sql: "SELECT path FROM edge_target_documents WHERE query = 'q'") }
        XCTAssertEqual(keysLeft, [])
    }

    /// A data directory written before edge-v7 held each target's keys as a JSON array in its row.
    func testKeysStoredInTheTargetRowMoveToRowsOfTheirOwn() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("edge-targets-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let before = EdgeCacheStorage.migrations.filter { $0.identifier != "edge-v7-target-documents" }
        XCTAssertEqual(before.count, EdgeCacheStorage.migrations.count - 1)
        do {
            let old = try SQLiteStore(directory: directory, migrations: before)
            try await old.writer.write { db in
                try db.execute(sql: "INSERT INTO edge_clients (client_id, settings) VALUES ('c1', CAST('{}' AS BLOB))")
                try db.execute(sql: """
                    INSERT INTO edge_targets (client_id, query, sequence, synced, documents, target_id, resume_token, snapshot_us)
                    VALUES ('c1', 'q', 3, 1, CAST('["c/a","c/b"]' AS BLOB), 2, 'tok', 7)
                    """)
            }
        }
        let store = try SQLiteStore(directory: directory, migrations: EdgeCacheStorage.migrations)
        let saved = try XCTUnwrap(try target(EdgeCacheStorage(store: store, clientID: "c1"), "q"))
        XCTAssertEqual(Set(saved.documents), [path("a"), path("b")])
        XCTAssertEqual(saved.sequenceNumber, 3)
        XCTAssertEqual(saved.resumeToken, "tok")
        XCTAssertEqual(saved.targetID, 2)
    }
}
