import FiregateModel

/// Cache clean-up. Eager (the memory cache's default on the web): a document is dropped as
/// soon as nothing references it — no active listener's target or view holds it and no queued
/// write touches it — after a listener goes away, after a write settles, after a one-time read;
/// a query's cached result goes with its last listener.
extension EdgeClient {
    func collectEagerGarbage() {
        guard settings.garbageCollector == .eager else { return }
        var retained = queue.mutatedPaths
        var activeQueries = Set<String>()
        for entry in listeners.values {
            retained.formUnion(entry.serverPaths)
            retained.formUnion(entry.view.documents.map(\.document.path))
            activeQueries.insert(entry.queryID)
        }
        for path in remote.entries.keys where !retained.contains(path) {
            remote.set(path, nil)
            cacheStatistics.evictions += 1
        }
        syncedQueries.formIntersection(activeQueries)
    }
}
