import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import XCTest

private let docs = "/clients/gc/v1/projects/p/databases/(default)/documents"
private let allOfC = #"{"structuredQuery":{"from":[{"collectionId":"c"}]}}"#

/// LRU garbage collection of an edge client's cache through HTTP.
final class GarbageCollectionTests: XCTestCase {

    func testCollectedDocumentsMissOfflineWhileHeldOnesStay() async throws {
        try await withServer { client, _ in
            for id in ["a", "b"] {
                _ = try await client.send(.post, "\(base)/c?documentId=\(id)", #"{"fields":{"n":{"integerValue":"1"}}}"#)
            }
            // Online reads cache a and b; a pending write holds w.
            let online = try await client.send(.post, "\(docs):runQuery", allOfC)
            XCTAssertEqual(online.status, 200)
            _ = try await client.send(.post, "/clients/gc:disableNetwork")
            let written = try await client.send(.patch, "\(docs)/c/w", #"{"fields":{"n":{"integerValue":"2"}}}"#)
            XCTAssertEqual(written.status, 200, written.text)
            let state = try await client.send(.get, "/clients/gc").json
            XCTAssertEqual(state?["cache"]?["documents"], 2)
            XCTAssertGreaterThan(state?["cache"]?["bytes"]?.integerLike ?? 0, 0)
            XCTAssertGreaterThan(state?["cache"]?["mutationBytes"]?.integerLike ?? 0, 0)

            // Over the default 100 MiB threshold nothing runs.
            let skipped = try await client.send(.post, "/clients/gc:collectGarbage", "{}").json
            XCTAssertEqual(skipped?["didRun"], false)
            XCTAssertEqual(skipped?["documentsRemoved"], 0)

            let collected = try await client.send(.post, "/clients/gc:collectGarbage", #"{"thresholdBytes":1,"percentile":100}"#)
            XCTAssertEqual(collected.json?["didRun"], true, collected.text)
            XCTAssertEqual(collected.json?["documentsRemoved"], 2)
            XCTAssertEqual(collected.json?["targetsRemoved"], 0)
            XCTAssertLessThan(collected.json?["bytesAfter"]?.integerLike ?? .max, collected.json?["bytesBefore"]?.integerLike ?? 0)

            assertError(try await client.send(.get, "\(docs)/c/a"), 503, "UNAVAILABLE", contains: "offline")
            let pending = try await client.send(.get, "\(docs)/c/w")
            XCTAssertEqual(pending.status, 200, "the pending write's document stays")
            let cached = try await client.send(.post, "\(docs):runQuery", allOfC).json?.arrayValue ?? []
            XCTAssertEqual(cached.compactMap { $0["document"]?["name"]?.stringValue }, ["\(root)/c/w"])
            let after = try await client.send(.get, "/clients/gc").json
            XCTAssertEqual(after?["gc"]?["runs"], 1)
            XCTAssertEqual(after?["cache"]?["evictions"], 2)

            assertError(try await client.send(.post, "/clients/gc:collectGarbage", #"{"percentile":101}"#), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.post, "/clients/gc:collectGarbage", #"{"thresholdBytes":"x"}"#), 400, "INVALID_ARGUMENT")
            _ = try await client.send(.put, "/clients/eager", #"{"persistence":"memory","garbageCollector":"eager"}"#)
            assertError(try await client.send(.post, "/clients/eager:collectGarbage", "{}"), 412, "FAILED_PRECONDITION", contains: "eager")
        }
    }

    func testTheScheduleRunsWhenTheServerClockAdvances() async throws {
        try await withServer { client, _ in
            _ = try await client.send(.put, "/clients/sched", #"{"cacheSizeBytes":1048576}"#)
            let big = String(repeating: "x", count: 120_000)
            for i in 0..<10 {
                _ = try await client.send(.post, "\(base)/big?documentId=d\(i)", #"{"fields":{"s":{"stringValue":"\#(big)"}}}"#)
            }
            // Read one by one through the client: d0 is the least recently used.
            for i in 0..<10 {
                let read = try await client.send(.get, "/clients/sched/v1/projects/p/databases/(default)/documents/big/d\(i)")
                XCTAssertEqual(read.status, 200)
            }
            func gc() async throws -> JSON? { try await client.send(.get, "/clients/sched").json?["gc"] }
            func eventually(runs: Int64) async throws -> JSON? {
                for _ in 0..<500 {
                    let state = try await gc()
                    if state?["runs"]?.integerLike == runs { return state }
                    try await Task.sleep(for: .milliseconds(10))
                }
                return try await gc()
            }

            _ = try await client.send(.post, "/emulator/v1/clock", #"{"advanceMs":59000}"#)
            try await Task.sleep(for: .milliseconds(100))
            let early = try await gc()
            XCTAssertEqual(early?["runs"], 0, "not before a minute of server time")

            _ = try await client.send(.post, "/emulator/v1/clock", #"{"advanceMs":1000}"#)
            let first = try await eventually(runs: 1)
            XCTAssertEqual(first?["runs"], 1)
            XCTAssertEqual(first?["lastRun"]?["documentsRemoved"], 1, "10 % of 10 sequence numbers")
            assertError(try await client.send(.get, "/clients/sched/v1/projects/p/databases/(default)/documents/big/d0?source=cache"), 503, "UNAVAILABLE")
            let kept = try await client.send(.get, "/clients/sched/v1/projects/p/databases/(default)/documents/big/d1?source=cache")
            XCTAssertEqual(kept.status, 200)

            _ = try await client.send(.post, "/emulator/v1/clock", #"{"advanceMs":299000}"#)
            try await Task.sleep(for: .milliseconds(100))
            let between = try await gc()
            XCTAssertEqual(between?["runs"], 1, "the next run is five minutes after the first")
            _ = try await client.send(.post, "/emulator/v1/clock", #"{"advanceMs":1000}"#)
            let second = try await eventually(runs: 2)
            XCTAssertEqual(second?["runs"], 2)
        }
    }
}
