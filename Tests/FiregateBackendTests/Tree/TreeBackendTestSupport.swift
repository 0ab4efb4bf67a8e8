import FiregateBackend
import FiregateModel
import FiregateStore
import Foundation
import XCTest

func path(_ text: String) -> TreePath { try! TreePath(validating: text) }

func tree(_ json: JSON, at location: TreePath = .root) -> TreeNode {
    try! TreeNodeDecoder.decode(json, at: location, serverValues: nil)
}

func render(_ node: TreeNode) -> String { TreeNodeWriter.string(node) }

/// A backend over a fresh SQLite store (in memory, or in `directory`).
func makeTree(directory: URL? = nil, settings: TreeStreamSettings = TreeStreamSettings()) throws -> (TreeBackend, SQLiteStore) {
    let store = try SQLiteStore(directory: directory, migrations: TreeBackend.migrations)
    return (TreeBackend(storage: SQLiteTreeStorage(store: store), clock: ServerClock(), settings: settings), store)
}

extension TreeBackend {
    @discardableResult
    func set(_ ns: String, _ location: String, _ json: JSON, ifMatch: String? = nil) async throws -> TreeWriteOutcome {
        let at = path(location)
        return try await write(namespace: ns, TreeWriteRequest(path: at, operation: .set(try TreeWriteValue.prepare(json, at: at)), ifMatch: ifMatch))
    }

    func update(_ ns: String, _ location: String, _ entries: [String: JSON]) async throws {
        let at = path(location)
        let prepared = try entries.map { key, value in
            TreeUpdateEntry(path: path(key), value: try TreeWriteValue.prepare(value, at: at.appending(path(key))))
        }
        _ = try await write(namespace: ns, TreeWriteRequest(path: at, operation: .update(prepared)))
    }

    func get(_ ns: String, _ location: String) async throws -> String {
        render(try await read(namespace: ns, path: path(location)))
    }
}

extension TreeStreamSubscription {
    /// The next frame's text, failing after a timeout instead of hanging the test.
    func nextText(timeout: Duration = .seconds(5)) async throws -> String? {
        try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { await self.next().map { String(decoding: $0.bytes, as: UTF8.self) } }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw CancellationError()
            }
            let first = try await group.next()!
            group.cancelAll()
            return first
        }
    }
}
