import FiregateModel

/// Export and import of every namespace (`/emulator/v1/export`, `/import`).
extension TreeBackend {
    /// Every namespace that holds data, with its whole value (priorities included).
    public func exportAll() async throws -> [(String, TreeNode)] {
        var result: [(String, TreeNode)] = []
        for name in try await namespaceNames() {
            let node = try await read(namespace: name, path: .root)
            if !node.isEmpty { result.append((name, node)) }
        }
        return result
    }

    /// Makes every namespace hold exactly what `namespaces` gives (the others become empty),
    /// each durably; open streams see the new values as `put` events.
    public func replaceAll(_ namespaces: [(String, TreeNode)]) async throws {
        let given = Set(namespaces.map(\.0))
        for name in try await namespaceNames() where !given.contains(name) {
            _ = try await write(namespace: name, TreeWriteRequest(path: .root, operation: .set(.node(.empty))))
        }
        for (name, node) in namespaces {
            _ = try await write(namespace: name, TreeWriteRequest(path: .root, operation: .set(.node(node))))
        }
    }
}
