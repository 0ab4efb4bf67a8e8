import FiregateModel

/// Cache clean-up, the SDK's two collectors.
///
/// Eager (the memory cache's default on the web): a document is dropped as soon as nothing
/// references it — no active listener's target or view holds it and no queued write touches
/// it — after a listener goes away, after a write settles, after a one-time read; a query's
/// cached result goes with its last listener.
///
/// LRU (persistent caches, and memory caches configured for it): `LruGarbageCollector` plans
/// a pass by sequence numbers; it runs on the SDK's schedule and on `:collectGarbage`.
extension EdgeClient {
    func collectEagerGarbage() {
        guard settings.garbageCollector == .eager else { return }
        local.collectEagerGarbage(activeQueries: activeQueries, retained: referencedPaths)
    }

    /// Targets of open listeners.
    var activeQueries: Set<String> { Set(queries.states.values.map(\.queryID)) }

    /// Documents held by queued writes and open listeners' views.
    var referencedPaths: Set<ResourcePath> {
        var retained = local.mutationQueue.mutatedPaths
        for entry in queries.states.values { retained.formUnion(entry.view.documents.map(\.document.path)) }
        return retained
    }

    /// Bytes the cache holds: documents, targets and queued writes.
    var cacheBytes: Int { local.remoteDocuments.byteSize + local.targetCache.byteSize + local.mutationQueue.byteSize }

    /// `POST /clients/{id}:collectGarbage`: one LRU pass now. `thresholdBytes` defaults to the
    /// client's `cacheSizeBytes` (-1: nothing is collected), `percentile` to 10.
    public func collectGarbage(thresholdBytes: Int64?, percentile: Int?) throws(FiregateError) -> JSON {
        try beginDataCall()
        guard settings.garbageCollector == .lru else {
            throw .clientState("This client uses eager garbage collection, which drops unreferenced documents at once; LRU collection applies to clients with \"garbageCollector\": \"lru\".")
        }
        var parameters = LruGarbageCollector.Parameters(thresholdBytes: thresholdBytes ?? settings.cacheSizeBytes)
        if let percentile { parameters.percentile = percentile }
        return runLruCollection(parameters)
    }

    /// The scheduled pass; false once the client stopped (no further runs).
    func runScheduledGarbageCollection() -> Bool {
        guard started, !terminated else { return false }
        if settings.garbageCollector == .lru {
            _ = runLruCollection(LruGarbageCollector.Parameters(thresholdBytes: settings.cacheSizeBytes))
        }
        return true
    }

    func runLruCollection(_ parameters: LruGarbageCollector.Parameters) -> JSON {
        local.beginOperation()
        let before = cacheBytes
        let plan = LruGarbageCollector.plan(targets: local.targetCache, documents: local.remoteDocuments.entries.keys, cacheBytes: before,
                                            activeQueries: activeQueries, pinned: referencedPaths,
                                            parameters: parameters)
        local.removeCollected(plan)
        let result: JSON = [
            "didRun": .bool(plan.didRun), "sequenceNumbersCollected": .int(Int64(plan.sequenceNumbersCollected)),
            "documentsRemoved": .int(Int64(plan.documents.count)), "targetsRemoved": .int(Int64(plan.targets.count)),
            "bytesBefore": .int(Int64(before)), "bytesAfter": .int(Int64(cacheBytes)),
        ]
        if plan.didRun {
            local.noteGarbageCollected(result.withMember("time", .string(now().rfc3339)))
            backend.operations.record(.garbageCollected(client: id, documentsRemoved: plan.documents.count, targetsRemoved: plan.targets.count))
            timeline.record(.gc, [("documentsRemoved", .int(Int64(plan.documents.count))), ("targetsRemoved", .int(Int64(plan.targets.count))),
                                  ("bytesBefore", .int(Int64(before))), ("bytesAfter", .int(Int64(cacheBytes)))])
        }
        return result
    }
}
