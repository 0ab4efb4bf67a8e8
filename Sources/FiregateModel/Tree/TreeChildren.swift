import OrderedCollections

/// The children of an inner tree node, always kept in key order (`TreeKeyOrder`), never empty
/// when stored in a `TreeNode`.
///
/// Keeping the order on write makes reads (GET, `$key` queries, output) a plain walk;
/// appending in key order — push ids, the common case — costs O(1).
public struct TreeChildren: Sendable, Equatable {
    public private(set) var storage: OrderedDictionary<String, TreeNode>

    public init() { storage = [:] }

    /// Builds from unordered pairs (unique keys, non-empty nodes) with one sort.
    public init(unsorted pairs: [(String, TreeNode)]) {
        let sorted = pairs.sorted { TreeKeyOrder.less($0.0, $1.0) }
        storage = OrderedDictionary(uniqueKeysWithValues: sorted)
    }

    public var isEmpty: Bool { storage.isEmpty }
    public var count: Int { storage.count }
    public var keys: OrderedSet<String> { storage.keys }

    public subscript(key: String) -> TreeNode? { storage[key] }

    /// Sets or removes (for an empty node) the child `key`, keeping key order.
    public mutating func set(_ key: String, _ node: TreeNode) {
        if node.isEmpty {
            storage.removeValue(forKey: key)
            return
        }
        if let index = storage.index(forKey: key) {
            storage.values[index] = node
            return
        }
        if let last = storage.keys.last, !TreeKeyOrder.less(last, key) {
            storage.updateValue(node, forKey: key, insertingAt: insertionIndex(for: key))
        } else {
            storage[key] = node
        }
    }

    /// Applies `body` to the child `key` in place (an absent child starts empty); the child is
    /// removed if it ends empty.
    public mutating func modify(_ key: String, _ body: (inout TreeNode) -> Void) {
        if let index = storage.index(forKey: key) {
            body(&storage.values[index])
            if storage.values[index].isEmpty { storage.remove(at: index) }
            return
        }
        var child = TreeNode.empty
        body(&child)
        set(key, child)
    }

    func insertionIndex(for key: String) -> Int {
        var low = 0
        var high = storage.count
        let keys = storage.keys
        while low < high {
            let mid = (low + high) / 2
            if TreeKeyOrder.less(keys[mid], key) { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

extension TreeChildren: Sequence {
    public func makeIterator() -> OrderedDictionary<String, TreeNode>.Iterator { storage.makeIterator() }
}
