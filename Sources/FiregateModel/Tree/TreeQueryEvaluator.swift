/// Runs a `TreeQuery` over a node: the children in range, ordered by the index then the key,
/// cut to the limit. A query that only orders returns the node whole; a filtering query over
/// a leaf or an empty node selects nothing (as the JS SDK's filters do).
public enum TreeQueryEvaluator {
    /// The selected children in query order, or the whole node for an ordering-only query.
    public enum Result: Sendable, Equatable {
        case whole(TreeNode)
        case children([TreeQueryEntry])
    }

    public static func evaluate(_ query: TreeQuery, on node: TreeNode) -> Result {
        guard query.filters else { return .whole(node) }
        guard let kids = node.children else { return .children([]) }
        var entries: [TreeQueryEntry] = []
        entries.reserveCapacity(query.limit == nil ? kids.count : 16)
        for (key, child) in kids {
            let entry = TreeQueryEntry(key: key, node: child, sortValue: sortValue(query.index, key: key, node: child))
            if let start = query.start, !admitsAsStart(entry, start, index: query.index) { continue }
            if let end = query.end, !admitsAsEnd(entry, end, index: query.index) { continue }
            entries.append(entry)
        }
        if query.index != .key {
            // Children come in key order already, so a stable sort on the index alone breaks
            // ties by key.
            entries = stableSorted(entries) { compareSortValues($0.sortValue, $1.sortValue) < 0 }
        }
        switch query.limit {
        case .first(let n)?: if entries.count > n { entries.removeSubrange(n...) }
        case .last(let n)?: if entries.count > n { entries.removeSubrange(..<(entries.count - n)) }
        case nil: break
        }
        return .children(entries)
    }

    /// The value a child sorts by under `index`.
    public static func sortValue(_ index: TreeQuery.Index, key: String, node: TreeNode) -> TreeSortValue {
        switch index {
        case .key: .key(key)
        case .value: .rank(TreeValueOrder.Rank(node))
        case .child(let path): .rank(TreeValueOrder.Rank(node.node(at: path)))
        case .priority: .priority(node.priority)
        }
    }

    public static func compareSortValues(_ a: TreeSortValue, _ b: TreeSortValue) -> Int {
        switch (a, b) {
        case let (.key(x), .key(y)): TreeKeyOrder.compare(x, y)
        case let (.rank(x), .rank(y)): TreeValueOrder.compare(x, y)
        case let (.priority(x), .priority(y)): TreeValueOrder.comparePriorities(x, y)
        default: 0
        }
    }

    static func boundValue(_ bound: TreeQuery.Bound, index: TreeQuery.Index) -> TreeSortValue {
        switch index {
        case .key:
            if case .string(let s)? = bound.value { return .key(s) }
            return .key("")
        case .value, .child: return .rank(TreeValueOrder.Rank(bound.value))
        case .priority: return .priority(bound.value)
        }
    }

    static func admitsAsStart(_ entry: TreeQueryEntry, _ bound: TreeQuery.Bound, index: TreeQuery.Index) -> Bool {
        let c = compareSortValues(entry.sortValue, boundValue(bound, index: index))
        if c != 0 { return c > 0 }
        guard let key = bound.key, index != .key else { return bound.inclusive }
        let k = TreeKeyOrder.compare(entry.key, key)
        return bound.inclusive ? k >= 0 : k > 0
    }

    static func admitsAsEnd(_ entry: TreeQueryEntry, _ bound: TreeQuery.Bound, index: TreeQuery.Index) -> Bool {
        let c = compareSortValues(entry.sortValue, boundValue(bound, index: index))
        if c != 0 { return c < 0 }
        guard let key = bound.key, index != .key else { return bound.inclusive }
        let k = TreeKeyOrder.compare(entry.key, key)
        return bound.inclusive ? k <= 0 : k < 0
    }

    public static func stableSorted(_ entries: [TreeQueryEntry], by less: (TreeQueryEntry, TreeQueryEntry) -> Bool) -> [TreeQueryEntry] {
        let indexed = entries.enumerated().sorted { a, b in
            if less(a.element, b.element) { return true }
            if less(b.element, a.element) { return false }
            return a.offset < b.offset
        }
        return indexed.map(\.element)
    }
}

/// One child selected by a query.
public struct TreeQueryEntry: Sendable, Equatable {
    public let key: String
    public let node: TreeNode
    public let sortValue: TreeSortValue

    public init(key: String, node: TreeNode, sortValue: TreeSortValue) {
        self.key = key
        self.node = node
        self.sortValue = sortValue
    }
}

/// The value a child sorts by under some index.
public enum TreeSortValue: Sendable, Hashable {
    case key(String)
    case rank(TreeValueOrder.Rank)
    case priority(TreeLeaf?)
}

extension TreeQueryEvaluator.Result {
    /// The result as a node (children in key order), e.g. for ETags and comparisons.
    public var node: TreeNode {
        switch self {
        case .whole(let node): return node
        case .children(let entries): return TreeNode(children: TreeChildren(unsorted: entries.map { ($0.key, $0.node) }))
        }
    }

    /// The result as JSON bytes, children in query order (arrays still as arrays when dense).
    public func bytes(format: TreeFormat, style: JSONWriter.Style) -> [UInt8] {
        switch self {
        case .whole(let node):
            return TreeNodeWriter.bytes(node, format: format, style: style)
        case .children(let entries):
            if entries.isEmpty { return Array("null".utf8) }
            let asNode = node
            if format == .plain, let kids = asNode.children, TreeNodeWriter.arrayLength(kids) != nil {
                return TreeNodeWriter.bytes(asNode, format: format, style: style)
            }
            var fields: [(String, TreeNodeWriter.Member)] = entries.map { ($0.key, .node($0.node)) }
            var out: [UInt8] = []
            TreeNodeWriter.writeObject(&fields, format: format, style: style, indent: 0, into: &out)
            return out
        }
    }
}
