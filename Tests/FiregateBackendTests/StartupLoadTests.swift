@testable import FiregateBackend
import FiregateModel
import FiregateStore
import Foundation
import Synchronization
import XCTest

/// A store whose `loadAll` waits until released (or fails), to watch the background load.
final class SlowLoadStorage: DocumentStorage {
    private let release = DispatchSemaphore(value: 0)
    private let documents: [(DatabaseID, Document)]
    private let failure: (any Error)?

    init(documents: [(DatabaseID, Document)], failure: (any Error)? = nil) {
        self.documents = documents
        self.failure = failure
    }

    func finishLoading() { release.signal() }

    func loadAll() throws -> [(DatabaseID, Document)] {
        release.wait()
        if let failure { throw failure }
        return documents
    }

    func enqueue(_ batch: DocumentPersistBatch, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        batch.companion?.enqueueAlone()
        onDurable(.success(()))
    }

    func enqueueClear(_ database: DatabaseID, onDurable: @escaping @Sendable (Result<Void, any Error>) -> Void) { onDurable(.success(())) }

    func enqueueLoad(_ database: DatabaseID, completion: @escaping @Sendable (Result<[Document], any Error>) -> Void) {
        DispatchQueue.global().async { completion(.success([])) }
    }
}

/// The stored documents load on a thread of their own; every access to the databases waits
/// for them, and a failed load never lets one through.
final class StartupLoadTests: XCTestCase {
    let stored = Document(path: rpath("c/stored"), fields: ["n": .integer(7)],
                          createTime: Timestamp(microseconds: 1_000_000), updateTime: Timestamp(microseconds: 2_000_000))

    func testAccessWaitsForTheBackgroundLoadAndSeesWhatWasStored() async throws {
        let storage = SlowLoadStorage(documents: [(testDB, stored)])
        let backend = try DocumentBackend(storage: storage, clock: ServerClock(), loadInBackground: true)
        let reader = Task.detached { try backend.database(testDB).get(rpath("c/stored")).value }
        try await Task.sleep(for: .milliseconds(50))
        storage.finishLoading()
        let read = try await reader.value
        XCTAssertEqual(read, stored, "the read waited for the load instead of seeing an empty database")
        try await backend.loaded()
        XCTAssertEqual(backend.allDatabases.count, 1)
    }

    func testAFailedLoadIsReportedAndLetsNoAccessThrough() async throws {
        let storage = SlowLoadStorage(documents: [], failure: FiregateError(.dataLoss, "unreadable row"))
        let backend = try DocumentBackend(storage: storage, clock: ServerClock(), loadInBackground: true)
        let accessed = Mutex(false)
        Thread.detachNewThread {
            _ = backend.database(testDB)
            accessed.withLock { $0 = true }
        }
        storage.finishLoading()
        do {
            try await backend.loaded()
            XCTFail("the load's failure must be reported")
        } catch let error as FiregateError {
            XCTAssertEqual(error.status, .dataLoss)
        }
        try await Task.sleep(for: .milliseconds(100))
        XCTAssertFalse(accessed.withLock { $0 }, "an access went on after a failed load")
    }

    func testWithoutTheBackgroundTheLoadIsDoneOnReturn() async throws {
        let storage = SlowLoadStorage(documents: [(testDB, stored)])
        storage.finishLoading()
        let backend = try DocumentBackend(storage: storage, clock: ServerClock())
        XCTAssertEqual(try backend.database(testDB).get(rpath("c/stored")).value, stored)
        try await backend.loaded()
    }
}
