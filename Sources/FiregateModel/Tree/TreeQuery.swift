/// A Realtime Database query as data: what to order children by, an optional range on that
/// order (with key tie-breaks) and an optional limit from either end.
public struct TreeQuery: Sendable, Hashable {
    /// What children are ordered by.
    public enum Index: Sendable, Hashable {
        case key
        case value
        case priority
        case child(TreePath)
    }

    /// One end of a range: a value of the index and, optionally, a key to break ties.
    /// Without a key a start bound admits every key at `value` (an exclusive one none), an
    /// end bound likewise.
    public struct Bound: Sendable, Hashable {
        /// nil is null.
        public var value: TreeLeaf?
        public var key: String?
        public var inclusive: Bool

        public init(value: TreeLeaf?, key: String? = nil, inclusive: Bool = true) {
            self.value = value
            self.key = key
            self.inclusive = inclusive
        }
    }

    /// How many children to keep, from which end of the order.
    public enum Limit: Sendable, Hashable {
        case first(Int)
        case last(Int)
    }

    public var index: Index
    public var start: Bound?
    public var end: Bound?
    public var limit: Limit?

    public init(index: Index, start: Bound? = nil, end: Bound? = nil, limit: Limit? = nil) {
        self.index = index
        self.start = start
        self.end = end
        self.limit = limit
    }

    /// Whether the query selects only some children (a range or a limit), rather than only
    /// ordering them.
    public var filters: Bool { start != nil || end != nil || limit != nil }
}
