/// The order of values when a query orders by `$value` or by a child: null, false, true,
/// numbers ascending, strings (by UTF-16 code units), then objects. Objects all tie with each
/// other, so their order falls to the key.
public enum TreeValueOrder {
    /// What a node contributes to an ordering: its class and, for leaves, the leaf.
    public enum Rank: Sendable, Hashable {
        case null
        case leaf(TreeLeaf)
        case object

        public init(_ node: TreeNode) {
            switch node.content {
            case .empty: self = .null
            case .leaf(let leaf): self = .leaf(leaf)
            case .children: self = .object
            }
        }

        public init(_ leaf: TreeLeaf?) {
            self = leaf.map { .leaf($0) } ?? .null
        }

        var typeOrder: Int {
            switch self {
            case .null: 0
            case .leaf(.bool(false)): 1
            case .leaf(.bool(true)): 2
            case .leaf(.int), .leaf(.double): 3
            case .leaf(.string): 4
            case .object: 5
            }
        }
    }

    /// -1, 0 or 1 comparing two values in query order.
    public static func compare(_ a: Rank, _ b: Rank) -> Int {
        let (ta, tb) = (a.typeOrder, b.typeOrder)
        if ta != tb { return ta < tb ? -1 : 1 }
        switch (a, b) {
        case let (.leaf(x), .leaf(y)): return compareLeaves(x, y)
        default: return 0
        }
    }

    /// Leaves of the same type class: numbers by value (integers exactly), strings as JS does.
    public static func compareLeaves(_ a: TreeLeaf, _ b: TreeLeaf) -> Int {
        switch (a, b) {
        case let (.int(x), .int(y)): return x == y ? 0 : (x < y ? -1 : 1)
        case let (.string(x), .string(y)): return TreeKeyOrder.compareText(x, y)
        case let (.bool(x), .bool(y)): return x == y ? 0 : (!x ? -1 : 1)
        default:
            if let x = a.number, let y = b.number { return x == y ? 0 : (x < y ? -1 : 1) }
            return 0
        }
    }

    /// Priorities: none, then numbers, then strings.
    public static func comparePriorities(_ a: TreeLeaf?, _ b: TreeLeaf?) -> Int {
        func order(_ p: TreeLeaf?) -> Int {
            switch p {
            case nil: 0
            case .int?, .double?, .bool?: 1
            case .string?: 2
            }
        }
        let (oa, ob) = (order(a), order(b))
        if oa != ob { return oa < ob ? -1 : 1 }
        guard let a, let b else { return 0 }
        return compareLeaves(a, b)
    }
}
