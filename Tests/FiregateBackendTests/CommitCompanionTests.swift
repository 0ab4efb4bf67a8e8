@testable import FiregateBackend
import FiregateModel
import FiregateStore
import FiregateTestSupport
import Foundation
import GRDB
import XCTest

/// A `CommitCompanion` becomes durable in the same SQLite transaction as its document commit:
/// both or neither, never one without the other.
final class CommitCompanionTests: XCTestCase {
    static let marks = StoreMigration("test-marks") { db in try db.execute(sql: "CREATE TABLE marks (name TEXT NOT NULL)") }

    func mark(_ store: SQLiteStore, _ name: String) -> SQLiteCommitCompanion {
        SQLiteCommitCompanion(store: store) { db in try db.execute(sql: "INSERT INTO marks (name) VALUES (?)", arguments: [name]) }
    }

    func marks(_ store: SQLiteStore) throws -> [String] {
        try store.writer.read { db in try String.fetchAll(db, sql: "SELECT name FROM marks ORDER BY name") }
    }

    func storedPaths(_ store: SQLiteStore) throws -> [String] {
        try store.writer.read { db in try String.fetchAll(db, sql: "SELECT path FROM documents ORDER BY path") }
    }

    func testTheCompanionIsDurableWhenTheCommitReturns() async throws {
        let backend = try await Backend(directory: try temporaryDirectory(self), defaultProject: "p", extraMigrations: [Self.marks])
        let db = backend.documents.database(testDB)
        _ = try await db.commit([set("c/a", ["n": .integer(1)])], companion: mark(backend.store, "a"))
        XCTAssertEqual(try storedPaths(backend.store), ["c/a"])
        XCTAssertEqual(try marks(backend.store), ["a"])
        // Also when the commit changes nothing (deleting a missing document).
        _ = try await db.commit([delete("c/missing")], companion: mark(backend.store, "b"))
        XCTAssertEqual(try marks(backend.store), ["a", "b"])
    }

    func testAFailingCompanionFailsTheCommitAndKeepsNothing() async throws {
        let backend = try await Backend(directory: try temporaryDirectory(self), defaultProject: "p", extraMigrations: [Self.marks])
        let db = backend.documents.database(testDB)
        let failing = SQLiteCommitCompanion(store: backend.store) { db in
            try db.execute(sql: "INSERT INTO marks (name) VALUES ('half')")
            try db.execute(sql: "INSERT INTO no_such_table VALUES (1)")
        }
        await assertThrowsFiregate(.internal, contains: "durable") {
            try await db.commit([set("c/lost", [:])], companion: failing)
        }
        XCTAssertEqual(try storedPaths(backend.store), [])
        XCTAssertEqual(try marks(backend.store), [])
        await waitUntil("the reload") { (try? db.get(rpath("c/lost")).value) == nil && !db.isRecovering }
    }

    func testACompanionOfAnotherStoreIsRefusedNotRunApart() async throws {
        let backend = try await Backend(directory: try temporaryDirectory(self), defaultProject: "p", extraMigrations: [Self.marks])
        let other = try SQLiteStore.inMemory(migrations: [Self.marks])
        await assertThrowsFiregate(.internal, contains: "durable") {
            try await backend.documents.database(testDB).commit([set("c/x", [:])], companion: mark(other, "elsewhere"))
        }
        XCTAssertEqual(try storedPaths(backend.store), [])
        XCTAssertEqual(try marks(other), [])
    }
}
