import FiregateModel

/// Computes the events a stream at some location sends for a change — the stream protocol's
/// semantics in one place, free of any state so it can be tested on its own.
public enum TreeStreamEvents {
    /// Events for a stream that sees its whole location.
    ///
    /// - A change at or below the location is forwarded with its path made relative (`put` for
    ///   a set, `patch` for a merge, keys of the merge being relative paths).
    /// - A change above it becomes a `put` of the location's new value at `/` — or, for a merge
    ///   whose entries all lie below the location, a `patch` at `/` — and nothing when the
    ///   location's value did not change.
    /// - `before` is the location's value before the change (used for changes above it);
    ///   `after` is the location's value now.
    public static func updates(for change: TreeChange, at location: TreePath, before: TreeNode, after: TreeNode) -> [TreeStreamUpdate] {
        if let relative = location.relativePath(to: change.path) {
            switch change.operation {
            case .set(let node): return [.put(relative, node)]
            case .merge(let entries): return entries.isEmpty ? [] : [.patch(relative, entries)]
            }
        }
        guard change.path.contains(location) else { return [] }
        switch change.operation {
        case .set:
            return before == after ? [] : [.put(.root, after)]
        case .merge(let entries):
            var below: [TreePatchEntry] = []
            var covered = false
            for entry in entries {
                let target = change.path.appending(entry.path)
                if target.contains(location) {
                    covered = true
                } else if let relative = location.relativePath(to: target) {
                    below.append(TreePatchEntry(path: relative, node: entry.node))
                }
            }
            if covered { return before == after ? [] : [.put(.root, after)] }
            return below.isEmpty ? [] : [.patch(.root, below)]
        }
    }

    /// Events for a stream of a filtering query: how to turn what the stream last saw
    /// (`previous`) into the query's current result. A change inside one child that stays in
    /// the window is forwarded as is; otherwise each child that entered, left or changed is
    /// replaced (`put /key` for one, a `patch` at `/` for several; null for one that left).
    public static func windowUpdates(for change: TreeChange, at location: TreePath,
                                     previous: [TreeQueryEntry], current: [TreeQueryEntry]) -> [TreeStreamUpdate] {
        var before: [String: TreeNode] = [:]
        for entry in previous { before[entry.key] = entry.node }
        var changed: [TreePatchEntry] = []
        var seen = Set<String>()
        for entry in current {
            seen.insert(entry.key)
            if before[entry.key] != entry.node { changed.append(TreePatchEntry(path: TreePath(keys: [entry.key]), node: entry.node)) }
        }
        for entry in previous where !seen.contains(entry.key) {
            changed.append(TreePatchEntry(path: TreePath(keys: [entry.key]), node: .empty))
        }
        if changed.isEmpty { return [] }
        if changed.count == 1, let only = changed.first, before[only.path.keys[0]] != nil, !only.node.isEmpty {
            let child = location.appending(only.path)
            if child.contains(change.path), change.path != child {
                return updates(for: change, at: location, before: .empty, after: .empty)
            }
        }
        if changed.count == 1 { return [.put(changed[0].path, changed[0].node)] }
        return [.patch(.root, changed)]
    }
}
