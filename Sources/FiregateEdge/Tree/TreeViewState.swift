import FiregateModel

/// A view's event cache: what a listener at a location or query currently sees, its children
/// in the query's order, and whether it is complete (the SDK's `fullyInitialized`).
struct TreeViewState: Equatable {
    var node: TreeNode
    var entries: [TreeQueryEntry]
    var complete: Bool

    static let initial = TreeViewState(node: .empty, entries: [], complete: false)

    /// The view of `data` (server data with pending writes) for `query` (nil: key order).
    init(data: TreeNode, query: TreeQuery?, complete: Bool) {
        self.complete = complete
        if let query, query.filters {
            if case .children(let selected) = TreeQueryEvaluator.evaluate(query, on: data) {
                entries = selected
            } else {
                entries = []
            }
            node = TreeNode(children: TreeChildren(unsorted: entries.map { ($0.key, $0.node) }), priority: nil)
            return
        }
        node = data
        let index = query?.index ?? .key
        var all: [TreeQueryEntry] = []
        for (key, child) in data.children ?? TreeChildren() {
            all.append(TreeQueryEntry(key: key, node: child, sortValue: TreeQueryEvaluator.sortValue(index, key: key, node: child)))
        }
        entries = index == .key ? all : TreeQueryEvaluator.stableSorted(all) { TreeQueryEvaluator.compareSortValues($0.sortValue, $1.sortValue) < 0 }
    }

    init(node: TreeNode, entries: [TreeQueryEntry], complete: Bool) {
        self.node = node
        self.entries = entries
        self.complete = complete
    }

    /// The events a new registration gets: `child_added` per child in order, then `value`
    /// if complete.
    func initialEvents(key: String?) -> [TreeEvent] {
        var events: [TreeEvent] = []
        var previous: String?
        for entry in entries {
            events.append(TreeEvent(kind: .childAdded, key: entry.key, node: entry.node, previousChildKey: previous))
            previous = entry.key
        }
        if complete { events.append(TreeEvent(kind: .value, key: key, node: node)) }
        return events
    }
}
