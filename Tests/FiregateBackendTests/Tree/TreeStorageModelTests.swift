import FiregateBackend
import FiregateModel
import FiregateStore
import FiregateTestSupport
import Foundation
import XCTest

/// Random writes, then a fresh backend over the same storage: what it loads must equal what
/// the first one held in memory (priorities included), proving the row-level writes exact.
final class TreeStorageModelTests: XCTestCase {
    let keys = ["a", "b", "0", "1"]

    func randomPath(_ rng: inout SplitMix64, maxDepth: Int = 3) -> TreePath {
        TreePath(keys: (0..<Int.random(in: 0...maxDepth, using: &rng)).map { _ in keys.randomElement(using: &rng)! })
    }

    func randomValue(_ rng: inout SplitMix64, depth: Int = 0) -> JSON {
        switch Int.random(in: 0..<8, using: &rng) {
        case 0: return .null
        case 1: return .int(Int64.random(in: 0..<5, using: &rng))
        case 2: return .double(Double(Int.random(in: 0..<5, using: &rng)) + 0.5)
        case 3: return .string(keys.randomElement(using: &rng)!)
        case 4: return [".value": .bool(Bool.random(using: &rng)), ".priority": .int(Int64.random(in: 0..<3, using: &rng))]
        default:
            guard depth < 2 else { return .int(1) }
            var fields: [(String, JSON)] = []
            for key in keys where Bool.random(using: &rng) { fields.append((key, randomValue(&rng, depth: depth + 1))) }
            if Bool.random(using: &rng) { fields.append((".priority", .string(keys.randomElement(using: &rng)!))) }
            return .object(.init(uniqueKeysWithValues: fields))
        }
    }

    func testReloadedTreeEqualsTheTreeInMemory() async throws {
        for seed in [3, 17, 2024] as [UInt64] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tree-model-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            var rng = SplitMix64(seed: seed)
            let (backend, _) = try makeTree(directory: directory)
            for _ in 0..<300 {
                let target = randomPath(&rng)
                switch Int.random(in: 0..<5, using: &rng) {
                case 0:
                    guard !target.isRoot else { continue }
                    try await backend.set("m", target.joined + "/.priority", Bool.random(using: &rng) ? .int(1) : nil)
                case 1, 2:
                    try await backend.set("m", target.joined, randomValue(&rng))
                default:
                    var entries: [String: JSON] = [:]
                    for _ in 0..<Int.random(in: 1...3, using: &rng) {
                        let relative = randomPath(&rng, maxDepth: 2)
                        guard !relative.isRoot else { continue }
                        let overlaps = entries.keys.contains { path($0).contains(relative) || relative.contains(path($0)) }
                        if !overlaps { entries[relative.joined] = randomValue(&rng) }
                    }
                    if !entries.isEmpty { try await backend.update("m", target.joined, entries) }
                }
            }
            let inMemory = try await backend.read(namespace: "m", path: .root)
            let (reopened, _) = try makeTree(directory: directory)
            let loaded = try await reopened.read(namespace: "m", path: .root)
            XCTAssertEqual(TreeNodeWriter.string(loaded, format: .export), TreeNodeWriter.string(inMemory, format: .export), "seed \(seed)")
            XCTAssertFalse(inMemory.isEmpty)
        }
    }
}
