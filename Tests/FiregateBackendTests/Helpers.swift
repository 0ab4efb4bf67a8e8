@testable import FiregateBackend
import FiregateModel
import FiregateStore
import Foundation
import XCTest

let testDB = DatabaseID(project: "p")

func rpath(_ text: String) -> ResourcePath { ResourcePath(text.split(separator: "/").map(String.init)) }
func fpath(_ text: String) -> FieldPath { try! FieldPath.parse(text) }
func docName(_ path: String) -> String { testDB.resourceName(rpath(path)) }

func set(_ path: String, _ fields: [String: Value], _ precondition: Precondition = Precondition()) -> Write {
    Write(path: rpath(path), operation: .update(fields: fields, mask: nil), precondition: precondition)
}

func delete(_ path: String, _ precondition: Precondition = Precondition()) -> Write {
    Write(path: rpath(path), operation: .delete, precondition: precondition)
}

/// An in-memory document database (no durability) with its own clock.
func memoryDatabase() throws -> DocumentDatabase {
    try DocumentBackend(storage: MemoryDocumentStorage(), clock: ServerClock()).database(testDB)
}

/// A fresh temporary directory, removed when the test ends.
func temporaryDirectory(_ test: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("firegate-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

func assertThrowsFiregate<T>(_ status: Status, contains: String? = nil, file: StaticString = #filePath, line: UInt = #line,
                             _ body: () async throws -> T) async {
    do {
        let value = try await body()
        XCTFail("expected \(status.rawValue), got \(value)", file: file, line: line)
    } catch let error as FiregateError {
        XCTAssertEqual(error.status, status, error.message, file: file, line: line)
        if let contains { XCTAssertTrue(error.message.contains(contains), "\"\(error.message)\" lacks \"\(contains)\"", file: file, line: line) }
    } catch {
        XCTFail("unexpected error \(error)", file: file, line: line)
    }
}

/// The next feed event, failing instead of hanging when none arrives.
func nextEvent(_ subscription: FeedSubscription, timeout: Duration = .seconds(10)) async -> FeedEvent? {
    await withTaskGroup(of: FeedEvent??.self) { group in
        group.addTask { .some(await subscription.next()) }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return .none
        }
        let first = await group.next()!
        group.cancelAll()
        if first == nil {
            subscription.cancel()
            XCTFail("no feed event within \(timeout)")
            // Let the other child (the reader, woken by cancel) finish.
            return nil
        }
        // The timer child ends at once on cancellation.
        return first!
    }
}
