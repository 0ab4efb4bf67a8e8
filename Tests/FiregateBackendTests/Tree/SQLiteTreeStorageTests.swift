import FiregateModel
@testable import FiregateStore
import XCTest

/// Row-level operations of `SQLiteTreeStorage`.
final class SQLiteTreeStorageTests: XCTestCase {
    func testDeletingASubtreeKeepsSiblingsThatShareItsPrefix() async throws {
        let storage = SQLiteTreeStorage(store: try SQLiteStore.inMemory(migrations: SQLiteTreeStorage.migrations))
        let paths = ["a", "a/x", "a/x/y", "a0", "a-b", "ab", "a.b", "b", "b/a"]
        let puts = paths.map { TreeStorageOperation.putRow(TreeStorageRow(path: $0, value: "1", priority: nil)) }
        try await storage.commit([TreeStorageBatch(namespace: "n", operations: puts),
                                  TreeStorageBatch(namespace: "other", operations: puts)])
        try await storage.commit([TreeStorageBatch(namespace: "n", operations: [.deleteSubtree("a"), .deleteSubtree("b/a")])])
        XCTAssertEqual(try storage.loadRows(namespace: "n").map(\.path).sorted(), ["a-b", "a.b", "a0", "ab", "b"])
        XCTAssertEqual(try storage.loadRows(namespace: "other").count, paths.count)
    }
}
