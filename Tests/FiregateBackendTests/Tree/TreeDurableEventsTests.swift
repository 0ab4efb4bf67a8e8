@testable import FiregateBackend
import FiregateModel
import FiregateStore
import Synchronization
import XCTest

/// A tree storage whose commits wait until the test lets them finish, or fail.
final class GatedTreeStorage: TreeStorage {
    private let waiting = Mutex<[CheckedContinuation<Void, any Error>]>([])

    func loadRows(namespace: String) throws -> [TreeStorageRow] { [] }
    func namespaces() throws -> [String] { [] }

    func commit(_ batches: [TreeStorageBatch]) async throws {
        try await withCheckedThrowingContinuation { continuation in waiting.withLock { $0.append(continuation) } }
    }

    var pending: Int { waiting.withLock { $0.count } }

    /// Finishes the oldest waiting commit, successfully or not.
    func finishOne(failing: Bool = false) {
        let next = waiting.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        if failing { next?.resume(throwing: FiregateError(.internal, "disk full")) } else { next?.resume() }
    }
}

/// Streams hear of a write only once it is durable, and never of one that failed to store.
final class TreeDurableEventsTests: XCTestCase {
    func testAStreamHearsOfAWriteOnlyOnceItIsDurable() async throws {
        let storage = GatedTreeStorage()
        let tree = TreeBackend(storage: storage, clock: ServerClock())
        let subscription = try await tree.subscribe(namespace: "n", key: TreeStreamKey(path: .root, query: nil, format: .plain))
        XCTAssertEqual(subscription.takeQueued().map(\.kind), [.put])
        let write = Task { try await tree.write(namespace: "n", TreeWriteRequest(path: path("a"), operation: .set(.node(TreeNode(leaf: .int(1)))))) }
        while storage.pending == 0 { try await Task.sleep(for: .milliseconds(1)) }
        let inMemory = try await tree.read(namespace: "n", path: path("a"))
        XCTAssertEqual(inMemory, TreeNode(leaf: .int(1)), "applied in memory")
        XCTAssertTrue(subscription.takeQueued().isEmpty, "no event before the write is durable")
        storage.finishOne()
        _ = try await write.value
        XCTAssertEqual(subscription.takeQueued().map { $0.update }, [.put(path("a"), TreeNode(leaf: .int(1)))])
    }

    func testAWriteThatFailsToStoreIsNeverHeardOf() async throws {
        let storage = GatedTreeStorage()
        let tree = TreeBackend(storage: storage, clock: ServerClock())
        let subscription = try await tree.subscribe(namespace: "n", key: TreeStreamKey(path: .root, query: nil, format: .plain))
        _ = subscription.takeQueued()
        let write = Task { try await tree.write(namespace: "n", TreeWriteRequest(path: path("a"), operation: .set(.node(TreeNode(leaf: .int(1)))))) }
        while storage.pending == 0 { try await Task.sleep(for: .milliseconds(1)) }
        storage.finishOne(failing: true)
        do {
            _ = try await write.value
            XCTFail("the write must fail")
        } catch {}
        XCTAssertFalse(subscription.takeQueued().contains { $0.kind == .put || $0.kind == .patch }, "the failed write reached the stream")
    }
}
