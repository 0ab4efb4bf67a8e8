import FiregateBackend
@testable import FiregateEdge
import FiregateModel
import FiregateTestSupport
import XCTest

/// Randomized: a persistent client that writes through any sequence of online and offline
/// periods and app restarts ends with the server holding exactly its writes applied in
/// order, and its own listener and reads showing the server's value.
final class TreeConvergenceTests: XCTestCase {
    static let paths = ["a", "a/b", "a/c", "d", "d/e/f", "g"]

    func randomValue(_ rng: inout SplitMix64) -> JSON {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: .null
        case 1: .int(Int64.random(in: 0..<100, using: &rng))
        case 2: ["x": .int(Int64.random(in: 0..<9, using: &rng)), "y": .string("s")]
        default: .string(["p", "q", "r"].randomElement(using: &rng)!)
        }
    }

    func testAnySequenceOfOnlineAndOfflineWritesConverges() async throws {
        for seed in UInt64(1)...12 {
            try await converge(seed: seed, steps: 50)
        }
    }

    func converge(seed: UInt64, steps: Int) async throws {
        var rng = SplitMix64(seed: seed)
        let backend = try await Backend.inMemory(extraMigrations: EdgeClients.migrations)
        let client = EdgeClients(backend: backend).client("r\(seed)")
        var expected = TreeNode.empty
        var listener = try await client.treeAccess().listen(TreeViewKey(path: .root, query: nil, parameters: [:]), kinds: [.value])
        var lastValue: TreeNode?
        func drain(_ stream: AsyncStream<TreeListenerOutput>, into value: inout TreeNode?) async {
            // Takes what the listener has been sent so far, without waiting for more.
            let collector = Task { () -> TreeNode? in
                var latest: TreeNode?
                for await output in stream {
                    if case .events(let events, _) = output, let last = events.last(where: { $0.kind == .value }) { latest = last.node }
                    if case .sync = output { break }
                }
                return latest
            }
            await client.syncAll(token: "drain")
            if let latest = await collector.value { value = latest }
        }
        for _ in 0..<steps {
            let tree = try await client.treeAccess()
            let location = try TreePath(validating: Self.paths.randomElement(using: &rng)!)
            switch Int.random(in: 0..<10, using: &rng) {
            case 0: await client.disableNetwork()
            case 1: await client.enableNetwork()
            case 2:
                _ = await client.restart()
                listener = try await client.treeAccess().listen(TreeViewKey(path: .root, query: nil, parameters: [:]), kinds: [.value])
                lastValue = nil
            case 3:
                let value = randomValue(&rng)
                let receipt = try await tree.write(.push(location, value))
                expected.set(try TreeNodeDecoder.decode(value, at: receipt.path, serverValues: nil), at: receipt.path)
            case 4, 5:
                let entries = [("m", randomValue(&rng)), ("n/o", randomValue(&rng))]
                _ = try await tree.write(.update(location, entries.map { (try! TreePath(validating: $0.0), $0.1) }))
                for (relative, value) in entries {
                    let target = location.appending(try TreePath(validating: relative))
                    expected.set(try TreeNodeDecoder.decode(value, at: target, serverValues: nil), at: target)
                }
            default:
                let value = randomValue(&rng)
                _ = try await tree.write(.set(location, value))
                expected.set(try TreeNodeDecoder.decode(value, at: location, serverValues: nil), at: location)
            }
        }
        await client.enableNetwork()
        let tree = try await client.treeAccess()
        let deadline = ContinuousClock.now + .seconds(20)
        while await tree.writes.count > 0 {
            guard ContinuousClock.now < deadline else { return XCTFail("seed \(seed): writes never drained") }
            try await Task.sleep(for: .milliseconds(5))
        }
        let server = try await backend.tree.read(namespace: "p", path: .root)
        XCTAssertEqual(server, expected, "seed \(seed): the server holds the client's writes in order")
        let read = try await tree.read(TreeViewKey(path: .root, query: nil, parameters: [:]))
        XCTAssertEqual(read.result.node, expected, "seed \(seed): the client reads the server's value")
        await drain(listener, into: &lastValue)
        XCTAssertEqual(lastValue ?? .empty, expected, "seed \(seed): the listener's last value is the server's")
    }
}
