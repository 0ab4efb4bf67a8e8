@testable import FiregateBackend
import FiregateModel
import FiregateStore
import FiregateTestSupport
import Foundation
import Synchronization
import XCTest

/// A storage whose "disk" is a dictionary and whose next batch can be made to fail, answering
/// from its own queue as a real writer thread does.
final class FlakyStorage: DocumentStorage {
    private let disk = Mutex<[ResourcePath: Document]>([:])
    private let failNext = Mutex(false)
    private let queue = DispatchQueue(label: "flaky-storage")

    func failNextBatch() { failNext.withLock { $0 = true } }
    var stored: [ResourcePath: Document] { disk.withLock { $0 } }

    func loadAll() throws -> [(DatabaseID, Document)] { [] }

    func enqueue(_ batch: DocumentPersistBatch, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        queue.async { [self] in
            if failNext.withLock({ let fail = $0; $0 = false; return fail }) {
                onDurable(.failure(FiregateError(.internal, "disk full")))
                return
            }
            disk.withLock { disk in
                for doc in batch.upserts { disk[doc.path] = doc }
                for path in batch.deletes { disk[path] = nil }
            }
            onDurable(.success(()))
        }
    }

    func enqueueClear(_ database: DatabaseID, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        queue.async { [self] in
            disk.withLock { $0.removeAll() }
            onDurable(.success(()))
        }
    }

    func enqueueLoad(_ database: DatabaseID, completion: @escaping @Sendable (Result<[Document], any Error>) -> Void) {
        queue.async { [self] in completion(.success(Array(stored.values))) }
    }
}

final class StorageFailureTests: XCTestCase {
    func testAWriteThatFailsToReachTheDiskIsNotKeptInMemory() async throws {
        let storage = FlakyStorage()
        let database = try DocumentBackend(storage: storage, clock: ServerClock()).database(testDB)
        _ = try await database.commit([set("c/kept", ["n": .integer(1)])])
        let subscription = database.feed.subscribe(bufferLimit: 16)

        storage.failNextBatch()
        await assertThrowsFiregate(.internal, contains: "durable") {
            try await database.commit([set("c/lost", ["n": .integer(2)])])
        }
        // The listener is told to start over; the state is the disk's again.
        await waitUntil("the reload") { (try? database.get(rpath("c/lost")).value) == nil && !database.isRecovering }
        guard case .closed(let error)? = await nextEvent(subscription) else { return XCTFail("listeners must be ended") }
        XCTAssertEqual(error.status, .unavailable)
        XCTAssertNotNil(try database.get(rpath("c/kept")).value)
        XCTAssertEqual(Set(storage.stored.keys), [rpath("c/kept")])

        // Later writes work normally.
        _ = try await database.commit([set("c/after", ["n": .integer(3)])])
        XCTAssertNotNil(try database.get(rpath("c/after")).value)
        XCTAssertEqual(Set(storage.stored.keys), [rpath("c/kept"), rpath("c/after")])
    }
}
