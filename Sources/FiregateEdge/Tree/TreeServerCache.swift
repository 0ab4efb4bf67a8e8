import FiregateModel

/// What the server told one client, kept as the SDK's persistence keeps it: a sparse copy of
/// the server's tree, and the tracked queries that loaded it, which say which parts are
/// complete (docs/wire/realtime-database.md, Complete views).
struct TreeServerCache {
    /// One query the client listened to (or read, or kept synced).
    struct TrackedQuery: Sendable, Equatable {
        var id: Int64
        /// Client-clock milliseconds of the last listen start or end.
        var lastUse: Int64
        /// The server answered it in full at least once.
        var complete: Bool
        /// A listener or keepSynced holds it now; active queries are never pruned.
        var active: Bool
        /// A filtering query's children in its last server result.
        var keys: Set<String>
    }

    private(set) var root = TreeNode.empty {
        didSet { measuredBytes = nil }
    }
    /// `byteSize` as last measured, until the data changes: measuring encodes the whole cache.
    private var measuredBytes: Int?
    private(set) var tracked: [TreeQuerySpec: TrackedQuery] = [:]
    private var nextTrackedID: Int64 = 1

    init() {}

    /// A cache read back from storage; queries that were active become inactive, as at an
    /// app start.
    init(root: TreeNode, tracked: [(TreeQuerySpec, TrackedQuery)], now: Int64) {
        self.root = root
        for (spec, var query) in tracked {
            if query.active {
                query.active = false
                query.lastUse = now
            }
            self.tracked[spec] = query
            nextTrackedID = max(nextTrackedID, query.id + 1)
        }
    }

    /// Whether a complete default query covers `path` (at it or above).
    func coversCompletely(_ path: TreePath) -> Bool {
        var location: TreePath? = path
        while let current = location {
            if tracked[.all(current)]?.complete == true { return true }
            location = current.parent
        }
        return false
    }

    /// The server data the client may use for `spec` and whether it is complete: the SDK's
    /// `serverCacheForQuery`. Incomplete data holds only the known-complete children.
    func serverData(for spec: TreeQuerySpec) -> (node: TreeNode, complete: Bool) {
        let node = root.node(at: spec.path)
        if coversCompletely(spec.path) { return (node, true) }
        if spec.query != nil, let query = tracked[spec], query.complete {
            return (Self.children(of: node, keys: query.keys), true)
        }
        var known = Set<String>()
        for (other, query) in tracked {
            if other.path == spec.path, other.query != nil { known.formUnion(query.keys) }
            if query.complete, other.query == nil, other.path.parent == spec.path, let key = other.path.last { known.insert(key) }
        }
        return (Self.children(of: node, keys: known), false)
    }

    static func children(of node: TreeNode, keys: Set<String>) -> TreeNode {
        guard let kids = node.children, !keys.isEmpty else { return .empty }
        var pairs: [(String, TreeNode)] = []
        for key in keys { if let child = kids[key] { pairs.append((key, child)) } }
        return TreeNode(children: TreeChildren(unsorted: pairs))
    }

    // MARK: Tracked queries

    /// Marks `spec` active or inactive (creating its record); returns it for storage.
    @discardableResult
    mutating func setActive(_ spec: TreeQuerySpec, _ active: Bool, now: Int64) -> TrackedQuery {
        var query = tracked[spec] ?? TrackedQuery(id: takeID(), lastUse: now, complete: false, active: active, keys: [])
        query.active = active
        query.lastUse = now
        tracked[spec] = query
        return query
    }

    private mutating func takeID() -> Int64 {
        defer { nextTrackedID += 1 }
        return nextTrackedID
    }

    // MARK: Server data

    /// A server update at `path` (absolute) under a complete default listen, or an
    /// onDisconnect operation applied locally: the value there replaces what was cached.
    mutating func applyServerValue(_ node: TreeNode, at path: TreePath) {
        root.set(node, at: path)
    }

    /// The full server result of `spec` arrived: a default query's value replaces the
    /// location and completes every tracked query at or under it; a filtering query's
    /// children merge in (children that left it go unless another query holds them) and it
    /// becomes complete with those keys. Returns the paths whose cached value changed and the
    /// tracked queries that changed.
    mutating func applyServerResult(_ node: TreeNode, for spec: TreeQuerySpec, now: Int64) -> (paths: [TreePath], queries: [TreeQuerySpec]) {
        var changedQueries: [TreeQuerySpec] = []
        guard spec.query != nil else {
            root.set(node, at: spec.path)
            if tracked[spec] == nil { setActive(spec, false, now: now) }
            for (other, query) in tracked where spec.path.contains(other.path) && !query.complete {
                tracked[other]?.complete = true
                if let filter = other.query { tracked[other]?.keys = Self.resultKeys(filter, on: root.node(at: other.path)) }
                changedQueries.append(other)
            }
            if !changedQueries.contains(spec) { changedQueries.append(spec) }
            return ([spec.path], changedQueries)
        }
        var query = tracked[spec] ?? setActive(spec, false, now: now)
        let newKeys = Set(node.children?.keys.map { $0 } ?? [])
        var paths: [TreePath] = []
        if !coversCompletely(spec.path) {
            let heldElsewhere = tracked.filter { $0.key != spec && $0.key.path == spec.path }.reduce(into: Set<String>()) { $0.formUnion($1.value.keys) }
            for key in query.keys.subtracting(newKeys) where !heldElsewhere.contains(key) && !coversCompletely(spec.path.appending(key)) {
                root.set(.empty, at: spec.path.appending(key))
                paths.append(spec.path.appending(key))
            }
        }
        for (key, child) in node.children ?? TreeChildren() where root.node(at: spec.path.appending(key)) != child {
            root.set(child, at: spec.path.appending(key))
            paths.append(spec.path.appending(key))
        }
        query.keys = newKeys
        query.complete = true
        tracked[spec] = query
        return (paths, [spec])
    }

    static func resultKeys(_ query: TreeQuery, on node: TreeNode) -> Set<String> {
        guard case .children(let entries) = TreeQueryEvaluator.evaluate(query, on: node) else { return [] }
        return Set(entries.map(\.key))
    }

    /// An acknowledged write where no active complete listen covers it: the server's value is
    /// cached and a complete, inactive default query records it, so it reads as complete later
    /// (the SDK's `applyUserWrite` on ack). Returns the tracked specs created or changed.
    mutating func applyAcknowledged(_ node: TreeNode, at path: TreePath, now: Int64) -> TreeQuerySpec? {
        root.set(node, at: path)
        let spec = TreeQuerySpec.all(path.isPriority ? path.parent! : path)
        guard tracked[spec]?.complete != true, !coversCompletely(spec.path) else { return nil }
        var query = tracked[spec] ?? setActive(spec, false, now: now)
        query.complete = true
        tracked[spec] = query
        return spec
    }

    /// Forgets `specs` and the cached data only they held: below a pruned location, what a
    /// remaining query still uses stays (pruning). Returns the locations whose data changed.
    mutating func remove(_ specs: [TreeQuerySpec]) -> [TreePath] {
        for spec in specs { tracked.removeValue(forKey: spec) }
        var changed: [TreePath] = []
        for spec in specs {
            if tracked.keys.contains(where: { $0.path.contains(spec.path) }) { continue }
            let kept = tracked.keys.compactMap { spec.path.relativePath(to: $0.path) }
            let before = root.node(at: spec.path)
            let after = Self.keeping(kept, of: before)
            if after != before {
                root.set(after, at: spec.path)
                changed.append(spec.path)
            }
        }
        return changed
    }

    /// Only the subtrees of `node` at `paths` (relative), everything else dropped.
    static func keeping(_ paths: [TreePath], of node: TreeNode) -> TreeNode {
        var kept = TreeNode.empty
        for path in paths { kept.set(node.node(at: path), at: path) }
        return kept
    }

    /// The cache's size as stored: its data in export form (values with priorities).
    mutating func byteSize() -> Int {
        if let measuredBytes { return measuredBytes }
        let bytes = TreeNodeWriter.bytes(root, format: .export).count
        measuredBytes = bytes
        return bytes
    }

    mutating func removeAll() {
        root = .empty
        tracked.removeAll()
    }
}
