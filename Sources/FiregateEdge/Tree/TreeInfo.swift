import FiregateModel

/// The `.info` locations of one client: `connected` and `serverTimeOffset`. Local to the
/// client, always complete, never synced or persisted; writing there is refused.
struct TreeInfo {
    static let rootKey = ".info"

    var connected = false
    var serverTimeOffsetMs: Int64 = 0

    /// The `.info` node (`{"connected":…,"serverTimeOffset":…}`).
    var node: TreeNode {
        TreeNode(children: TreeChildren(unsorted: [
            ("connected", TreeNode(leaf: .bool(connected))),
            ("serverTimeOffset", TreeNode(leaf: .int(serverTimeOffsetMs))),
        ]))
    }

    /// The value at an `.info` path (its first key is `.info`).
    func node(at path: TreePath) -> TreeNode {
        node.node(at: TreePath(keys: Array(path.keys.dropFirst())))
    }

    static let writeError = FiregateError.invalidArgument("Can't modify data under /.info/")
}
