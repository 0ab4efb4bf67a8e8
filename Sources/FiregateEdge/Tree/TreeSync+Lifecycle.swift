import FiregateBackend
import FiregateModel
import FiregateStore

/// Pruning the tree cache; what app restarts, terminate, delete and clearPersistence do to the
/// tree side; and the tree side as client state and archives show it.
extension TreeSync {
    // MARK: Pruning

    /// Counts a server-cache write; past the SDK's threshold the cache is pruned. Returns the
    /// locations whose data changed.
    func noteServerWrite() -> [TreePath] {
        serverWritesSinceCheck += 1
        guard TreeCachePruner.due(writesSinceCheck: serverWritesSinceCheck) else { return [] }
        return prune().paths
    }

    /// Prunes the tree cache to its size now (also what `:collectGarbage` does for the tree).
    public func pruneNow() -> JSON {
        let before = cache.byteSize()
        let result = prune()
        refreshViews(touching: result.paths)
        return ["queriesPruned": .int(Int64(result.queries)), "bytesBefore": .int(Int64(before)), "bytesAfter": .int(Int64(cache.byteSize())),
                "cacheSizeBytes": .int(cacheSizeBytes)]
    }

    private func prune() -> (queries: Int, paths: [TreePath]) {
        serverWritesSinceCheck = 0
        let result = TreeCachePruner.prune(&cache, maxBytes: cacheSizeBytes)
        if persistent, let storage, !result.queries.isEmpty { storage.deleteQueries(result.queries.map(\.1)) }
        saveCache(result.paths)
        return (result.queries.count, result.paths)
    }

    // MARK: Lifecycle

    /// App restart: listeners end, the connection drops (onDisconnect runs), transactions are
    /// lost; a memory client also loses its cache and queued writes. Returns the writes lost.
    func restart() -> Int {
        views.endAll(with: nil)
        disconnect()
        started = false
        onDisconnect.removeAll()
        var lost = 0
        for write in writes.writes where write.isTransaction || !persistent {
            writes.remove(write.id)
            finish(write.id, .rejected(FiregateError(.cancelled, "The write was lost when the app restarted.")))
            lost += 1
        }
        if !persistent { cache.removeAll() } else { cache = TreeServerCache(root: cache.root, tracked: cache.tracked.map { ($0.key, $0.value) }, now: nowMillis()) }
        for i in writes.writes.map(\.id) { writes.update(i) { $0.sent = false } }
        // The restarted app replays its queue at start, as the SDK does.
        if !writes.isEmpty { begin() }
        return lost
    }

    /// terminate(): listeners end and the connection drops.
    func terminate() {
        views.endAll(with: nil)
        disconnect()
        started = false
    }

    /// The client was deleted (its connection drops: onDisconnect runs) or the emulator was
    /// reset or imported (`reason`: nothing of the old state may reappear, so it does not).
    func shutdown(reason: FiregateError?) {
        views.endAll(with: reason)
        if reason != nil {
            onDisconnect.removeAll()
            keepRegistered()
        }
        disconnect()
        started = false
        for write in writes.writes { finish(write.id, .rejected(FiregateError(.cancelled, "The client was deleted."))) }
        writes.removeAll()
        cache.removeAll()
        storage?.clear(includingAuth: true)
    }

    /// clearPersistence(): the cache and the queue go.
    func clearPersistence() {
        for write in writes.writes { finish(write.id, .rejected(FiregateError(.cancelled, "The write was cleared with the persistence."))) }
        writes.removeAll()
        cache.removeAll()
        storage?.clear(includingAuth: false)
    }

    /// `gates:sync`: once everything the backend sent so far is applied (unless the watch
    /// gate holds it), every listener gets a `sync` event.
    func sync(token: String) async {
        if !link.holdWatch { await drainInputs() }
        views.broadcast(.sync(token: token))
    }

    /// The tree as a client archive holds it: the cache (export form, priorities kept), the
    /// tracked queries and the queued writes as stored (transactions are not kept, as on disk).
    func archive() -> JSON {
        [
            "cache": cache.root.exportJSON,
            "queries": .array(cache.tracked.sorted { $0.value.id < $1.value.id }.map { spec, query in
                ["path": .string(spec.path.joined), "parameters": .string(spec.parameters), "lastUse": .int(query.lastUse),
                 "complete": .bool(query.complete), "active": .bool(query.active), "keys": .array(query.keys.sorted().map { .string($0) })]
            }),
            "writes": .array(writes.writes.compactMap(\.stored)),
        ]
    }

    /// The tree part of the state of a client that never used the tree.
    static let idleState: JSON = [
        "connected": false, "pendingWrites": 0, "listeners": 0, "keepSynced": [], "onDisconnect": [],
        "cache": ["bytes": 0, "sizeBytes": 0, "trackedQueries": 0, "activeQueries": 0],
    ]

    /// The tree part of the client state.
    func state() -> JSON {
        [
            "connected": .bool(connected),
            "pendingWrites": .int(Int64(writes.count)),
            "listeners": .int(Int64(views.listenerCount)),
            "keepSynced": .array(views.keptSynced.map { .string($0.spec.description) }),
            "onDisconnect": .array(onDisconnect.operations.map(\.json)),
            "cache": [
                "bytes": .int(Int64(cache.byteSize())), "sizeBytes": .int(cacheSizeBytes),
                "trackedQueries": .int(Int64(cache.tracked.count)),
                "activeQueries": .int(Int64(cache.tracked.values.filter(\.active).count)),
            ],
        ]
    }
}
