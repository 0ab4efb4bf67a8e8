import FiregateModel

/// Bundles through a client: the SDK's `loadBundle` and `namedQuery`.
extension EdgeClient {
    /// `POST /clients/{id}:loadBundle`, as the SDK's sync engine does it (loadBundleImpl): a
    /// bundle no newer than one loaded with its id is skipped after its metadata; else the whole
    /// bundle is read first (a fault anywhere loads nothing), its documents enter the cache, its
    /// named queries are saved, and every view sees the changed documents. Returns the task's
    /// progress updates, the last one final.
    public func loadBundle(_ bytes: [UInt8]) throws(FiregateError) -> [LoadBundleProgress] {
        try beginDataCall()
        let metadata = try FirestoreBundle.metadata(of: bytes)
        if local.bundles.hasNewer(metadata) { return [.success(metadata)] }
        let database = settings.databaseID
        let bundle = try FirestoreBundle(bytes: bytes, database: database)
        var queries: [(FirestoreBundle.NamedQuery, Query)] = []
        for named in bundle.namedQueries { queries.append((named, try named.query(database: database))) }
        let changed = local.applyBundledDocuments(bundle)
        for (named, query) in queries {
            let results = Set(bundle.documents.filter { $0.queries.contains(named.name) }.map(\.path))
            local.saveNamedQuery(named, query: query, documents: results)
        }
        // syncEngineEmitNewSnapsAndNotifyLocalStore, with no remote event. A scripted watch's
        // views find their limbo documents against their targets; a live one's are the bundled
        // documents its server result lacks, looked up with its next result.
        let resolving = remote.isScripted ? [] : noteUnresolved(changed)
        if !changed.isEmpty { updateViews() }
        if !resolving.isEmpty {
            if remote.gates.holdWatch {
                remote.holdTargets(resolving)
            } else if remote.canUseNetwork {
                refreshTargets(resolving)
            }
        }
        local.noteBundleLoaded(bundle.metadata)
        backend.operations.record(.client(client: id, action: "bundleLoaded"))
        return bundle.progress
    }

    /// The live watch's current listeners whose server result lacks some of `changed`: those
    /// documents are in limbo for them until their next server result. Returns the listeners.
    private func noteUnresolved(_ changed: Set<ResourcePath>) -> [Int] {
        var ids: [Int] = []
        var noted = Set<String>()
        for (listenerID, entry) in queries.states where !entry.options.cacheOnly && entry.current {
            let keys = local.targetCache.targets[entry.queryID]?.documents ?? []
            let unknown = changed.filter { entry.query.containsPath($0) && !keys.contains($0) }
            guard !unknown.isEmpty else { continue }
            if noted.insert(entry.queryID).inserted { remote.markUnresolved(unknown, for: entry.queryID) }
            ids.append(listenerID)
        }
        return ids.sorted()
    }

    /// `GET /clients/{id}/namedQueries/{name}`: a query a loaded bundle saved under `name`.
    public func namedQuery(_ name: String) throws(FiregateError) -> FirestoreBundle.NamedQuery {
        try beginDataCall()
        guard let query = local.bundles.namedQueries[name] else {
            throw .notFound("No loaded bundle has a named query \"\(name)\".")
        }
        return query
    }
}
