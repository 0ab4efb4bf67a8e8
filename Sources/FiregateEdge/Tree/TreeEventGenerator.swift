import FiregateModel

/// Turns one operation's change of a view into the SDK's events (EventGenerator and
/// ChildChangeAccumulator): removed, added, moved, changed, then value; each type in the
/// query's order; a change whose indexed value moved also raises `child_moved`; `value` only
/// for a complete view that changed or just became complete.
///
/// Comparing the states before and after gives the accumulator's merged result directly: a
/// child removed then re-added is a change, one added then removed is nothing.
enum TreeEventGenerator {
    static func events(from old: TreeViewState, to new: TreeViewState, key: String?) -> [TreeEvent] {
        var oldByKey: [String: TreeQueryEntry] = [:]
        for entry in old.entries { oldByKey[entry.key] = entry }
        var newKeys = Set<String>()
        var previousOf: [String: String?] = [:]
        var previous: String?
        for entry in new.entries {
            newKeys.insert(entry.key)
            previousOf[entry.key] = previous
            previous = entry.key
        }
        var events: [TreeEvent] = []
        for entry in old.entries where !newKeys.contains(entry.key) {
            events.append(TreeEvent(kind: .childRemoved, key: entry.key, node: entry.node))
        }
        var moved: [TreeEvent] = []
        var changed: [TreeEvent] = []
        for entry in new.entries {
            let before = previousOf[entry.key] ?? nil
            guard let was = oldByKey[entry.key] else {
                events.append(TreeEvent(kind: .childAdded, key: entry.key, node: entry.node, previousChildKey: before))
                continue
            }
            guard was.node != entry.node else { continue }
            if was.sortValue != entry.sortValue {
                moved.append(TreeEvent(kind: .childMoved, key: entry.key, node: entry.node, previousChildKey: before))
            }
            changed.append(TreeEvent(kind: .childChanged, key: entry.key, node: entry.node, previousChildKey: before))
        }
        events += moved
        events += changed
        if new.complete && (!old.complete || old.node != new.node) {
            events.append(TreeEvent(kind: .value, key: key, node: new.node))
        }
        return events
    }
}
