@testable import FiregateModel

/// Builds a tree node from a JSON literal, failing the test on invalid data.
func node(_ json: JSON, at path: TreePath = .root) throws -> TreeNode {
    try TreeNodeDecoder.decode(json, at: path, serverValues: nil)
}

/// A node rendered as compact JSON text.
func text(_ node: TreeNode, format: TreeFormat = .plain) -> String {
    TreeNodeWriter.string(node, format: format)
}
