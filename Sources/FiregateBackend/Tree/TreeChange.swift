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
