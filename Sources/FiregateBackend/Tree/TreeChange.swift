import FiregateModel

/// One applied write, as streams see it: a value set at a path, or a merge of several
/// (relative path, value) entries under a path. Values are the stored ones (server values
/// resolved).
public struct TreeChange: Sendable, Equatable {
    public enum Operation: Sendable, Equatable {
        case set(TreeNode)
        case merge([TreePatchEntry])
    }

    public let path: TreePath
    public let operation: Operation

    public init(path: TreePath, operation: Operation) {
        self.path = path
        self.operation = operation
    }

    /// Whether a stream at `location` may see this change: it is at, above or below it.
    public func touches(_ location: TreePath) -> Bool {
        location.contains(path) || path.contains(location)
    }
}

/// One member of a merge: a path relative to the merge location, and its new value.
public struct TreePatchEntry: Sendable, Equatable {
    public let path: TreePath
    public let node: TreeNode

    public init(path: TreePath, node: TreeNode) {
        self.path = path
        self.node = node
    }
}

/// A change as a shared store's commit log keeps it, for other replicas (`TreeStorage.follow`):
/// `{"path":[keys],"set":<node>}` or `{"path":[keys],"merge":[{"path":[keys],"node":<node>}]}`,
/// nodes in the export format (priorities kept).
extension TreeChange {
    var json: JSON {
        func keys(_ path: TreePath) -> JSON { .array(path.keys.map { .string($0) }) }
        switch operation {
        case .set(let value): return ["path": keys(path), "set": value.exportJSON]
        case .merge(let entries): return ["path": keys(path), "merge": .array(entries.map { ["path": keys($0.path), "node": $0.node.exportJSON] })]
        }
    }

    init(json: JSON) throws(FiregateError) {
        func path(_ json: JSON?) throws(FiregateError) -> TreePath {
            guard let items = json?.arrayValue else { throw FiregateError(.dataLoss, "A replicated tree change has no path.") }
            return TreePath(keys: items.compactMap(\.stringValue))
        }
        let at = try path(json["path"])
        if let value = json["set"] {
            self.init(path: at, operation: .set(try TreeNodeDecoder.decode(value, at: at, serverValues: nil)))
        } else if let entries = json["merge"]?.arrayValue {
            var merged: [TreePatchEntry] = []
            for entry in entries {
                let relative = try path(entry["path"])
                merged.append(TreePatchEntry(path: relative, node: try TreeNodeDecoder.decode(entry["node"] ?? .null, at: at.appending(relative), serverValues: nil)))
            }
            self.init(path: at, operation: .merge(merged))
        } else {
            throw FiregateError(.dataLoss, "A replicated tree change is neither a set nor a merge.")
        }
    }
}
