import FiregateBackend
import FiregateModel
import FiregateTestSupport
import XCTest

/// Random writes against streams at many locations: a client that applies every event it
/// receives to its own copy must end up with exactly what the server holds.
final class TreeStreamModelTests: XCTestCase {
    let keys = ["a", "b", "c"]

    func randomPath(_ rng: inout SplitMix64, maxDepth: Int = 3) -> TreePath {
        TreePath(keys: (0..<Int.random(in: 0...maxDepth, using: &rng)).map { _ in keys.randomElement(using: &rng)! })
    }

    func randomValue(_ rng: inout SplitMix64, depth: Int = 0) -> JSON {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: return .null
        case 1: return .int(Int64.random(in: 0..<5, using: &rng))
        case 2: return .string(keys.randomElement(using: &rng)!)
        case 3: return .bool(Bool.random(using: &rng))
        default:
            guard depth < 2 else { return .int(1) }
            var fields: [(String, JSON)] = []
            for key in keys where Bool.random(using: &rng) { fields.append((key, randomValue(&rng, depth: depth + 1))) }
            return .object(.init(uniqueKeysWithValues: fields))
        }
    }

    /// Applies one stream event to a client's copy of the location.
    func apply(_ update: TreeStreamUpdate, to cache: inout TreeNode) {
        switch update {
        case .put(let path, let node): cache.set(node, at: path)
        case .patch(let path, let entries):
            for entry in entries { cache.set(entry.node, at: path.appending(entry.path)) }
        }
    }

    func testClientsApplyingEventsConvergeOnTheServerValue() async throws {
        for seed in [1, 42, 7, 1234, 99] as [UInt64] {
            try await converge(seed: seed)
        }
    }

    func converge(seed: UInt64) async throws {
        let (backend, _) = try makeTree()
        var rng = SplitMix64(seed: seed)
        var nonEmptyChecks = 0
        let locations = ["", "a", "a/b", "b/c/a", "c", "c/c"].map(path)
        let queries: [TreeQuery] = [
            TreeQuery(index: .key, limit: .first(2)),
            TreeQuery(index: .value, limit: .last(2)),
            TreeQuery(index: .child(path("a")), start: .init(value: .int(1)), end: .init(value: .string("b"))),
        ]
        var streams: [(TreeStreamSubscription, TreePath, TreeQuery?)] = []
        for location in locations {
            streams.append((try await backend.subscribe(namespace: "m", key: TreeStreamKey(path: location, query: nil, format: .plain)), location, nil))
        }
        for query in queries {
            for location in [TreePath.root, path("a"), path("b")] {
                streams.append((try await backend.subscribe(namespace: "m", key: TreeStreamKey(path: location, query: query, format: .plain)), location, query))
            }
        }
        var caches = Array(repeating: TreeNode.empty, count: streams.count)

        for step in 0..<400 {
            let target = randomPath(&rng)
            if Bool.random(using: &rng) {
                try await backend.set("m", target.joined, randomValue(&rng))
            } else {
                var entries: [String: JSON] = [:]
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    let relative = randomPath(&rng, maxDepth: 2)
                    guard !relative.isRoot else { continue }
                    let overlaps = entries.keys.contains { path($0).contains(relative) || relative.contains(path($0)) }
                    if !overlaps { entries[relative.joined] = randomValue(&rng) }
                }
                if !entries.isEmpty { try await backend.update("m", target.joined, entries) }
            }
            // Drain what each stream has so far and check every client's copy.
            if step % 20 == 19 {
                for (i, (stream, location, query)) in streams.enumerated() {
                    for frame in stream.takeQueued() where frame.kind != .keepAlive {
                        apply(try XCTUnwrap(frame.update), to: &caches[i])
                    }
                    let value = try await backend.read(namespace: "m", path: location)
                    let expected = query.map { TreeQueryEvaluator.evaluate($0, on: value).node } ?? value
                    XCTAssertEqual(render(caches[i]), render(expected), "seed \(seed): stream at \(location) \(query.map { "\($0)" } ?? "") after step \(step)")
                    if !expected.isEmpty { nonEmptyChecks += 1 }
                }
            }
        }
        for (stream, _, _) in streams { await backend.unsubscribe(stream) }
        XCTAssertGreaterThan(nonEmptyChecks, 50, "the random writes should leave data to compare")
    }
}
