import OrderedCollections

/// One node of a Realtime Database tree: empty (null), a leaf, or children in key order,
/// with an optional priority. A value type; copies share storage until written.
///
/// Invariants the mutators keep: an empty node has no priority; a children node has at least
/// one child; no child is empty.
public struct TreeNode: Sendable, Equatable {
    /// What the node holds.
    public enum Content: Sendable, Equatable {
        case empty
        case leaf(TreeLeaf)
        case children(TreeChildren)
    }

    public private(set) var content: Content
    /// A number or string; always nil on an empty node.
    public private(set) var priority: TreeLeaf?

    public static let empty = TreeNode(content: .empty, priority: nil)

    public init(content: Content, priority: TreeLeaf? = nil) {
        switch content {
        case .empty: self.content = .empty; self.priority = nil
        case .children(let children) where children.isEmpty: self.content = .empty; self.priority = nil
        default: self.content = content; self.priority = priority
        }
    }

    public init(leaf: TreeLeaf, priority: TreeLeaf? = nil) {
        self.init(content: .leaf(leaf), priority: priority)
    }

    public init(children: TreeChildren, priority: TreeLeaf? = nil) {
        self.init(content: .children(children), priority: priority)
    }

    public var isEmpty: Bool { content == .empty }

    public var leaf: TreeLeaf? {
        if case .leaf(let leaf) = content { return leaf }
        return nil
    }

    public var children: TreeChildren? {
        if case .children(let children) = content { return children }
        return nil
    }

    /// The child `key`, empty when absent or when this node is a leaf.
    public func child(_ key: String) -> TreeNode {
        if key == TreeKey.priority { return priorityNode }
        return children?[key] ?? .empty
    }

    /// The priority as a node of its own (what `GET …/.priority.json` reads).
    public var priorityNode: TreeNode {
        priority.map { TreeNode(leaf: $0) } ?? .empty
    }

    /// The node at `path` below this one (empty if absent).
    public func node(at path: TreePath) -> TreeNode {
        var node = self
        for key in path.keys {
            node = node.child(key)
            if node.isEmpty { return .empty }
        }
        return node
    }

    /// Replaces the node at `path` with `node` (deleting when empty). Writing `.priority` sets
    /// the priority of its parent. Ancestors left without children become empty and lose their
    /// priority; a leaf ancestor becomes an inner node and keeps its priority, as in production.
    public mutating func set(_ node: TreeNode, at path: TreePath) {
        set(node, at: path.keys[...])
    }

    mutating func set(_ node: TreeNode, at path: ArraySlice<String>) {
        guard let key = path.first else {
            self = node
            return
        }
        if key == TreeKey.priority, path.count == 1 {
            setPriority(node.leaf)
            return
        }
        var kids: TreeChildren
        switch content {
        case .children(let existing): kids = existing
        case .leaf, .empty:
            if node.isEmpty { return }
            kids = TreeChildren()
        }
        content = .empty  // drop our reference so `kids` is uniquely owned and edited in place
        kids.modify(key) { child in child.set(node, at: path.dropFirst()) }
        if kids.isEmpty {
            priority = nil
        } else {
            content = .children(kids)
        }
    }

    /// Sets the priority; ignored on an empty node (production drops it).
    public mutating func setPriority(_ priority: TreeLeaf?) {
        guard !isEmpty else { return }
        self.priority = priority
    }

    /// The node without any priority, at any depth — what equality of values means to
    /// clients that do not read priorities.
    public var withoutPriorities: TreeNode {
        switch content {
        case .empty: return .empty
        case .leaf(let leaf): return TreeNode(leaf: leaf)
        case .children(let kids):
            var out = TreeChildren()
            for (key, child) in kids { out.set(key, child.withoutPriorities) }
            return TreeNode(children: out)
        }
    }

    /// Number of keys on the longest path from this node to a leaf.
    public var depth: Int {
        guard let kids = children else { return 0 }
        var deepest = 0
        for (_, child) in kids { deepest = max(deepest, child.depth) }
        return deepest + 1
    }
}

extension TreeNode {
    /// The node as `format=export` writes it (priorities kept), parsed: the form archives, the
    /// replicas' commit log and forwarded writes carry.
    public var exportJSON: JSON {
        // The writer's output always parses.
        (try? JSONParser.parse(TreeNodeWriter.bytes(self, format: .export))) ?? .null
    }

    /// The node as plain JSON (children in key order, no priorities); null when empty.
    public var json: JSON {
        switch content {
        case .empty: return .null
        case .leaf(let leaf): return leaf.json
        case .children(let kids):
            var members = OrderedDictionary<String, JSON>()
            members.reserveCapacity(kids.count)
            for (key, child) in kids { members[key] = child.json }
            return .object(members)
        }
    }
}
