import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import FiregateTestSupport
import Foundation
import Hummingbird
import XCTest

final class ListenPropertyTests: XCTestCase {
    let queries: [String] = [
        #"{"from":[{"collectionId":"c"}],"orderBy":[{"field":{"fieldPath":"n"}}],"limit":3}"#,
        #"{"from":[{"collectionId":"c"}],"where":{"fieldFilter":{"field":{"fieldPath":"n"},"op":"GREATER_THAN_OR_EQUAL","value":{"integerValue":"2"}}},"orderBy":[{"field":{"fieldPath":"n"},"direction":"DESCENDING"}],"offset":1,"limit":2}"#,
        #"{"from":[{"collectionId":"c"}],"where":{"fieldFilter":{"field":{"fieldPath":"tag"},"op":"IN","value":{"arrayValue":{"values":[{"stringValue":"a"},{"stringValue":"b"}]}}}}}"#,
        #"{"from":[{"collectionId":"c"}],"where":{"compositeFilter":{"op":"OR","filters":[{"fieldFilter":{"field":{"fieldPath":"n"},"op":"LESS_THAN","value":{"integerValue":"2"}}},{"fieldFilter":{"field":{"fieldPath":"tag"},"op":"EQUAL","value":{"stringValue":"a"}}}]}}}"#,
        #"{"from":[{"collectionId":"c","allDescendants":true}],"orderBy":[{"field":{"fieldPath":"n"}}],"startAt":{"values":[{"integerValue":"1"}],"before":true},"limit":4}"#,
        #"{"from":[{"collectionId":"c"}],"where":{"fieldFilter":{"field":{"fieldPath":"tag"},"op":"NOT_EQUAL","value":{"stringValue":"b"}}}}"#,
    ]

    func sequence(of frame: String) -> Int64? {
        frame.split(separator: "\n").first { $0.hasPrefix("id: ") }.flatMap { $0.split(separator: ".").last }.flatMap { Int64($0) }
    }

    func data(_ frame: String) -> JSON? {
        frame.split(separator: "\n").first { $0.hasPrefix("data: ") }.flatMap { try? JSONParser.parse(String($0.dropFirst(6))) }
    }

    /// Random commits under a live query stream: every frame's documents equal a full re-run of the
    /// query at that frame's position, its changes turn the previous frame's documents into these,
    /// and no commit that changed the result goes without a frame.
    func testStreamFramesMatchFullRecompute() async throws {
        var generator = SplitMix64(seed: 99)
        for (queryIndex, queryText) in queries.enumerated() {
            let db = try await Backend.inMemory().documents.database(testDB)
            let query = try Query(structuredQuery: try JSONParser.parse(queryText), parent: ResourcePath([]), database: testDB)
            let paths = (0..<8).map { "c/d\($0)" } + (0..<3).map { "p/1/c/e\($0)" } + ["other/o"]
            func randomFields() -> [String: Value] {
                var fields: [String: Value] = [:]
                if Int.random(in: 0..<5, using: &generator) > 0 { fields["n"] = .integer(Int64.random(in: 0..<5, using: &generator)) }
                if Bool.random(using: &generator) { fields["tag"] = .string(["a", "b", "c"].randomElement(using: &generator)!) }
                return fields
            }
            // Seed, then remember the expected result after every commit (one commit = one sequence step).
            var expected: [Int64: [Document]] = [:]
            var counter: Int64 = 0
            func commit(_ writes: [Write]) async throws {
                counter += 1
                _ = try await db.commit(writes + [setWrite("log/x", ["i": .integer(counter)])])
                expected[counter] = try db.runQuery(query).value.documents
            }
            try await commit(paths.prefix(5).map { setWrite($0, randomFields()) })

            let stream = QueryListenStream(database: db, query: query, options: ListenOptions(), ticker: KeepAliveTicker(seconds: 3600), frames: ListenFrameCache(),
                                           changesOnly: false, resumeAfter: nil, resuming: false, access: nil)
            let log = FrameLog()
            let task = Task {
                var writer: any ResponseBodyWriter = RecordingWriter(log: log)
                await stream.run(&writer)
            }
            await waitUntil("the first snapshot") { log.frames.count == 1 }
            for _ in 0..<60 {
                var writes: [Write] = []
                var touched = Set<String>()
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let path = paths.randomElement(using: &generator)!
                    guard touched.insert(path).inserted else { continue }
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: writes.append(deleteWrite(path))
                    case 1: writes.append(Write(path: ResourcePath(path.split(separator: "/").map(String.init)), operation: .transform,
                                                transforms: [FieldTransform(field: try FieldPath.parse("n"), operation: .increment(.integer(1)))]))
                    default: writes.append(setWrite(path, randomFields()))
                    }
                }
                try await commit(writes)
            }
            // The last sequence whose commit changed the result must get a frame; wait for it.
            var lastChange: Int64 = 1
            for s in 2...counter where expected[s] != expected[s - 1] { lastChange = s }
            await waitUntil("the stream to reach sequence \(lastChange)") { log.frames.contains { self.sequence(of: $0) == lastChange } }
            try await db.reset()
            await task.value

            let frames = log.frames.filter { $0.hasPrefix("event: snapshot") }
            XCTAssertEqual(sequence(of: frames[0]), 1)
            var previous: [JSON] = []
            var previousSequence: Int64 = 0
            for frame in frames {
                let seq = try XCTUnwrap(sequence(of: frame))
                let body = try XCTUnwrap(data(frame))
                let documents = try XCTUnwrap(body["documents"]?.arrayValue)
                let want = try XCTUnwrap(expected[seq]).map { $0.json(database: testDB) }
                XCTAssertEqual(documents.map { JSONWriter.string($0) }, want.map { JSONWriter.string($0) }, "query \(queryIndex) at sequence \(seq)")
                // Replaying the changes on the previous documents gives these documents.
                var replay = previous
                for change in body["changes"]?.arrayValue ?? [] {
                    let old = Int(change["oldIndex"]?.integerLike ?? -1), new = Int(change["newIndex"]?.integerLike ?? -1)
                    if old >= 0 {
                        XCTAssertEqual(replay[old]["name"], change["document"]?["name"], "query \(queryIndex) seq \(seq): oldIndex")
                        replay.remove(at: old)
                    }
                    if new >= 0 { replay.insert(change["document"] ?? nil, at: new) }
                }
                XCTAssertEqual(replay.map { JSONWriter.string($0) }, documents.map { JSONWriter.string($0) },
                               "query \(queryIndex) at sequence \(seq): changes do not replay")
                // Nothing changed between the previous frame and this one without a frame of its own.
                if previousSequence > 0 {
                    for s in previousSequence..<seq {
                        XCTAssertEqual(expected[s], expected[previousSequence], "query \(queryIndex): a change at \(s) sent no frame")
                    }
                    XCTAssertNotEqual(expected[seq], expected[previousSequence], "query \(queryIndex): a frame at \(seq) without a change")
                }
                previous = documents
                previousSequence = seq
            }
            XCTAssertEqual(previousSequence, lastChange)
        }
    }
}
