import FiregateBackend
import FiregateModel

/// One write the app made through the client, not yet acknowledged: what it does locally
/// (server values resolved on the client) and what goes on the wire (unresolved).
struct TreeUserWrite: Sendable {
    enum Change: Sendable {
        case set(TreeNode)
        case merge([TreePatchEntry])
    }

    /// What is sent: a set or update carries its values as written (server values resolved
    /// by the server); a transaction is rerun against the server's value.
    enum Wire: Sendable {
        case set(JSON)
        case merge([(TreePath, JSON)])
        case transaction(TreeTransaction)
    }

    let id: Int64
    let path: TreePath
    var change: Change
    let wire: Wire
    /// Stored durably (always true for memory clients): only durable writes are sent.
    var durable: Bool
    /// Handed to the backend; its answer has not been applied yet.
    var sent = false
    /// When it was made (µs): with `id`, what tells it apart from a write of a reused id once
    /// a restart reuses ids (`QueuedWriteReceipt.stamp`); 0 for one stored without it.
    var stamp: Int64 = 0

    var isTransaction: Bool {
        if case .transaction = wire { return true }
        return false
    }

    /// The wire form as stored in the client's queue: `{"id","stamp","path","set"}` or `{…,"merge":{…}}`.
    var stored: JSON? {
        switch wire {
        case .set(let value): return ["id": .int(id), "stamp": .int(stamp), "path": .string(path.joined), "set": value]
        case .merge(let entries):
            return ["id": .int(id), "stamp": .int(stamp), "path": .string(path.joined), "merge": .members(entries.map { ($0.0.joined, $0.1) })]
        case .transaction: return nil
        }
    }

    /// The touched paths, absolute.
    var touchedPaths: [TreePath] {
        switch change {
        case .set: [path]
        case .merge(let entries): entries.map { path.appending($0.path) }
        }
    }

    func touches(_ location: TreePath) -> Bool {
        touchedPaths.contains { $0.contains(location) || location.contains($0) }
    }
}

/// The SDK's WriteTree: pending user writes in id order, laid over server data to give what
/// the app sees.
struct TreeWriteTree {
    private(set) var writes: [TreeUserWrite] = []

    var isEmpty: Bool { writes.isEmpty }
    var count: Int { writes.count }

    mutating func add(_ write: TreeUserWrite) {
        let index = writes.firstIndex { $0.id > write.id } ?? writes.count
        writes.insert(write, at: index)
    }

    @discardableResult
    mutating func remove(_ id: Int64) -> TreeUserWrite? {
        guard let index = writes.firstIndex(where: { $0.id == id }) else { return nil }
        return writes.remove(at: index)
    }

    mutating func update(_ id: Int64, _ body: (inout TreeUserWrite) -> Void) {
        guard let index = writes.firstIndex(where: { $0.id == id }) else { return }
        body(&writes[index])
    }

    subscript(id: Int64) -> TreeUserWrite? { writes.first { $0.id == id } }

    mutating func removeAll() { writes.removeAll() }

    /// `base` (the server value at `path`) with every pending write applied in order.
    func overlay(_ base: TreeNode, at path: TreePath) -> TreeNode {
        var node = base
        for write in writes {
            switch write.change {
            case .set(let value): Self.apply(value, at: write.path, to: &node, at: path)
            case .merge(let entries):
                for entry in entries { Self.apply(entry.node, at: write.path.appending(entry.path), to: &node, at: path) }
            }
        }
        return node
    }

    static func apply(_ value: TreeNode, at target: TreePath, to node: inout TreeNode, at location: TreePath) {
        if let inner = target.relativePath(to: location) {
            node = value.node(at: inner)
        } else if let below = location.relativePath(to: target) {
            node.set(value, at: below)
        }
    }

    /// Whether a pending set covers `path` whole, so the location is complete with no
    /// server data (an offline `set()` fires `value`).
    func coversCompletely(_ path: TreePath) -> Bool {
        writes.contains { write in
            if case .set = write.change { return write.path.contains(path) }
            return false
        }
    }

    /// Whether any pending write touches `path`.
    func touches(_ path: TreePath) -> Bool { writes.contains { $0.touches(path) } }
}
