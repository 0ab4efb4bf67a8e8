import FiregateModel
import FiregateStore

/// Translates between trees and storage rows: rows for a written subtree, the row an inner
/// node keeps for itself, and the tree rebuilt from all rows of a namespace.
public enum TreeStorageEncoding {
    /// Rows for every leaf and every prioritised inner node of `node`, placed at `path`.
    public static func rows(for node: TreeNode, at path: TreePath) -> [TreeStorageRow] {
        var rows: [TreeStorageRow] = []
        var keys = path.keys
        collect(node, keys: &keys, into: &rows)
        return rows
    }

    static func collect(_ node: TreeNode, keys: inout [String], into rows: inout [TreeStorageRow]) {
        if let row = ownRow(of: node, keys: keys) { rows.append(row) }
        guard let kids = node.children else { return }
        for (key, child) in kids {
            keys.append(key)
            collect(child, keys: &keys, into: &rows)
            keys.removeLast()
        }
    }

    /// The row `node` keeps for itself at `path`: its leaf, or its priority when it is an inner
    /// node; nil when it needs none.
    public static func ownRow(of node: TreeNode, at path: TreePath) -> TreeStorageRow? {
        ownRow(of: node, keys: path.keys)
    }

    static func ownRow(of node: TreeNode, keys: [String]) -> TreeStorageRow? {
        let priority = node.priority.map(text)
        switch node.content {
        case .empty: return nil
        case .leaf(let leaf): return TreeStorageRow(path: keys.joined(separator: "/"), value: text(leaf), priority: priority)
        case .children: return priority.map { TreeStorageRow(path: keys.joined(separator: "/"), value: nil, priority: $0) }
        }
    }

    static func text(_ leaf: TreeLeaf) -> String {
        var out: [UInt8] = []
        TreeNodeWriter.writeLeaf(leaf, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    static func leaf(_ text: String) -> TreeLeaf? {
        (try? JSONParser.parse(text)).flatMap(TreeLeaf.init(json:))
    }

    /// The operations that persist replacing the subtrees at `paths` (none an ancestor of
    /// another) in a tree that now is `root`: each subtree's old rows go, its new rows come, and
    /// every ancestor's own row is rewritten (a leaf may have become an inner node, an inner
    /// node may have emptied and lost its priority).
    public static func operations(replacing paths: [TreePath], in root: TreeNode) -> [TreeStorageOperation] {
        var operations: [TreeStorageOperation] = []
        var ancestors = Set<TreePath>()
        var ancestorOrder: [TreePath] = []
        for path in paths {
            var ancestor = path
            while let parent = ancestor.parent {
                ancestor = parent
                if ancestors.insert(ancestor).inserted { ancestorOrder.append(ancestor) }
            }
        }
        for ancestor in ancestorOrder {
            operations.append(.deleteRow(ancestor.joined))
            if let row = ownRow(of: root.node(at: ancestor), at: ancestor) { operations.append(.putRow(row)) }
        }
        for path in paths {
            operations.append(.deleteSubtree(path.joined))
            for row in rows(for: root.node(at: path), at: path) { operations.append(.putRow(row)) }
        }
        return operations
    }

    /// The operations that persist a priority change of the node at `path`.
    public static func operations(refreshingOwnRowAt path: TreePath, in root: TreeNode) -> [TreeStorageOperation] {
        var operations: [TreeStorageOperation] = [.deleteRow(path.joined)]
        if let row = ownRow(of: root.node(at: path), at: path) { operations.append(.putRow(row)) }
        return operations
    }

    /// Rebuilds a tree from its rows (any order). Unreadable rows are skipped.
    public static func tree(from rows: [TreeStorageRow]) -> TreeNode {
        let top = Builder()
        for row in rows {
            var builder = top
            if !row.path.isEmpty {
                for key in row.path.split(separator: "/", omittingEmptySubsequences: false) {
                    let key = String(key)
                    if let next = builder.children[key] {
                        builder = next
                    } else {
                        let next = Builder()
                        builder.children[key] = next
                        builder = next
                    }
                }
            }
            if let value = row.value { builder.leaf = leaf(value) }
            if let priority = row.priority { builder.priority = leaf(priority) }
        }
        return top.node()
    }

    /// A mutable trie used only while loading.
    final class Builder {
        var leaf: TreeLeaf?
        var priority: TreeLeaf?
        var children: [String: Builder] = [:]

        func node() -> TreeNode {
            if !children.isEmpty {
                var pairs: [(String, TreeNode)] = []
                pairs.reserveCapacity(children.count)
                for (key, child) in children {
                    let node = child.node()
                    if !node.isEmpty { pairs.append((key, node)) }
                }
                let kids = TreeChildren(unsorted: pairs)
                if !kids.isEmpty { return TreeNode(children: kids, priority: priority) }
            }
            if let leaf { return TreeNode(leaf: leaf, priority: priority) }
            return .empty
        }
    }
}
