import FiregateBackend
import FiregateModel
import FiregateStore

/// The watch side of sync: which listener targets the backend's commits touch, fetching their
/// server results, the watch gate, and the online/offline transitions.
extension EdgeClient {
    func ensureWatch() {
        updateWatchInterest()
        guard remote.watch == nil, !remote.isScripted, remote.canUseNetwork, !terminated, !queries.serverListenerIDs.isEmpty else { return }
        remote.openWatch(on: database, for: self, rulesGeneration: backend.rules.generation)
    }

    /// Keeps the watch's interest equal to the listeners' queries (called when they change,
    /// before a new listener's first server fetch, so no commit after it is missed).
    func updateWatchInterest() {
        remote.watchInterest.set(queries.states.values.filter { !$0.options.cacheOnly }.map(\.query))
    }

    func stopWatch() {
        remote.closeWatch()
    }

    /// Waits until every commit published so far has been through `onWatchEvent`, so that what
    /// a test did before this call has had its effect on the listeners.
    func catchUpWithWatch() async {
        guard let watch = remote.watch else { return }
        await watch.subscription.waitUntilHandled(through: database.feed.lastPublished)
    }

    /// A backend commit (or a feed condition) reached this client.
    func onWatchEvent(_ event: FeedEvent) {
        guard remote.network.online, remote.watch != nil else { return }
        var touched: [Int] = []
        switch event {
        case .commit(let record):
            var touchedQueries = Set<String>()
            for (queryID, query) in queries.serverQueries {
                let keys = local.targetCache.targets[queryID]?.documents ?? []
                if record.changes.contains(where: { query.containsPath($0.path) || keys.contains($0.path) }) { touchedQueries.insert(queryID) }
            }
            // Targets with a server result follow the commit's changes, not a new query run.
            if !remote.gates.holdWatch {
                let incremental = touchedQueries.filter { remote.feed.hasResult($0) }
                if !incremental.isEmpty { applyChanges(record, to: incremental) }
                touchedQueries.subtract(incremental)
            }
            if !touchedQueries.isEmpty {
                touched = queries.states.compactMap { !$0.value.options.cacheOnly && touchedQueries.contains($0.value.queryID) ? $0.key : nil }
            }
        case .overflow:
            touched = queries.serverListenerIDs
        case .closed:
            // The database was reset: reconnect and refetch everything.
            stopWatch()
            ensureWatch()
            touched = queries.serverListenerIDs
        case .heartbeat:
            // The rules changed (the feed wakes every listen): every listen is judged again.
            guard remote.noteRulesGeneration(backend.rules.generation) else { return }
            touched = queries.serverListenerIDs
        }
        guard !touched.isEmpty else { return }
        if remote.gates.holdWatch {
            remote.holdTargets(touched)
        } else {
            refreshTargets(touched.sorted())
        }
    }

    /// `gates:releaseWatch`: deliver everything held as one consistent snapshot. Every target
    /// is brought to the backend's current state, so a commit whose feed event is still on its
    /// way to this client is included too.
    public func releaseWatch() {
        guard remote.network.online, !remote.isScripted else { return }
        remote.releaseHeldTargets()
        let ids = queries.serverListenerIDs
        if !ids.isEmpty { refreshTargets(ids) }
    }

    /// A commit's effect on targets that already have their server result: `FeedWatch` makes
    /// it one remote event (the commit's documents, the targets' joined and left keys), which
    /// enters the cache; every view is updated with those documents only — the cost follows
    /// the change, not the size of the results.
    func applyChanges(_ record: CommitRecord, to queryIDs: Set<String>) {
        // A target refreshed after this commit already holds it.
        let serverQueries = queries.serverQueries
        let behind = queryIDs.sorted().filter { remote.feed.isBehind($0, record) }.compactMap { queryID in
            serverQueries[queryID].map { FeedWatch.Target(queryID: queryID, query: $0, targetID: local.targetCache.targets[queryID]?.targetID) }
        }
        guard !behind.isEmpty else { return }
        // The keys are read in place: a copy of the target cache still alive when the event enters
        // it would cost a copy of its whole storage.
        let (event, changed) = remote.remoteEvent(for: record, targets: behind, keys: { local.targetCache.targets[$0]?.documents ?? [] },
                                                  database: settings.databaseID)
        for target in behind { queries.setCurrent(true, queryID: target.queryID, serverOnly: true) }
        local.applyRemoteEvent(event)
        updateViews(changed: changed)
    }

    /// Fetches the server result of each listener's target and takes them into the cache as one
    /// remote event; the targets are current; then every view is updated once. What a target
    /// or its view held that the server no longer lists is resolved as the SDK resolves it: a
    /// document its view still shows is in limbo — the snapshot of the new result keeps it,
    /// from cache — until its own lookup (a second remote event) says what became of it; the
    /// others' fate comes with the result (docs/edge-clients.md, "Resuming").
    func refreshTargets(_ ids: [Int]) {
        let database = self.database
        let judge = backend.rules.documentJudge(settings.databaseID, caller: RulesCaller(identity: rulesIdentity, surface: "edge", client: id))
        var event = RemoteEvent(snapshotVersion: .zero, targetChanges: [:], targetMismatches: [:], documentUpdates: [:], resolvedLimboDocuments: [])
        var lookups = RemoteEvent(snapshotVersion: .zero, targetChanges: [:], targetMismatches: [:], documentUpdates: [:], resolvedLimboDocuments: [])
        var results: [(queryID: String, sequence: Int64, matches: QueryMatches?, limbo: Set<ResourcePath>)] = []
        var refreshed = Set<String>()
        for listenerID in ids {
            guard let entry = queries.states[listenerID], !refreshed.contains(entry.queryID) else { continue }
            if let judge, let denial = EdgeClient.denial(of: entry.query, by: judge, in: database) {
                endListeners(ofQuery: entry.queryID, with: denial)
                continue
            }
            refreshed.insert(entry.queryID)
            let (matches, sequence) = database.matches(entry.query)
            var seen = Set<ResourcePath>()
            for doc in matches.window {
                event.documentUpdates[doc.path] = .found(doc, committed: false)
                seen.insert(doc.path)
            }
            // What the target's listeners' views show (they share the target).
            var shown = Set<ResourcePath>()
            for state in queries.states.values where state.queryID == entry.queryID && !state.options.cacheOnly {
                shown.formUnion(state.view.documents.lazy.filter { !$0.hasLocalMutations }.map(\.document.path))
            }
            let limbo = shown.subtracting(seen)
            let target = local.targetCache.targets[entry.queryID]
            for path in (target?.documents ?? []).union(shown).subtracting(seen) where event.documentUpdates[path] == nil {
                let doc = (try? database.get(path).value) ?? nil
                let update: RemoteDocument = doc.map { .found($0, committed: false) } ?? .missing(version: local.clock.now())
                if limbo.contains(path) { lookups.documentUpdates[path] = update } else { event.documentUpdates[path] = update }
            }
            if let target {
                event.targetChanges[target.targetID] = TargetChange(resumeToken: "", current: true, added: seen.subtracting(target.documents),
                                                                    removed: target.documents.subtracting(seen))
            }
            let windowed = entry.query.limit != nil || entry.query.offset > 0
            results.append((entry.queryID, sequence, windowed ? matches : nil, limbo))
        }
        // A document in limbo for one target but in another's result is known already.
        for path in lookups.documentUpdates.keys where event.documentUpdates[path] != nil { lookups.documentUpdates[path] = nil }
        local.applyRemoteEvent(event)
        for (queryID, sequence, matches, limbo) in results {
            remote.takeServerResult(queryID, sequence: sequence, matches: matches, unresolved: limbo.filter { lookups.documentUpdates[$0] != nil })
            if queries.states.values.contains(where: { $0.queryID == queryID && !$0.options.cacheOnly && !$0.current }),
               let targetID = local.targetCache.targets[queryID]?.targetID {
                broadcast(TabCoordinator.targetNotification(targetID, "current"))
            }
            queries.setCurrent(true, queryID: queryID, serverOnly: true)
        }
        updateViews()
        guard !lookups.documentUpdates.isEmpty else { return }
        // The limbo documents' lookups answer.
        lookups.resolvedLimboDocuments = Set(lookups.documentUpdates.keys)
        local.applyRemoteEvent(lookups)
        for (queryID, _, _, limbo) in results where !limbo.isEmpty {
            remote.resolve(lookups.resolvedLimboDocuments, for: queryID)
        }
        updateViews()
    }

    /// Why the rules refuse a listen (a lookup is a `get`, any other query a `list`), or nil.
    static func denial(of query: Query, by judge: DocumentRulesJudge, in database: DocumentDatabase) -> FiregateError? {
        do {
            if let path = query.lookedUpPath(database: database.id) {
                try judge.get([(path, try database.get(path).value)], in: database)
            } else {
                try judge.list(query, in: database)
            }
            return nil
        } catch {
            return error
        }
    }

    /// disableNetwork (or injected loss): every target stops being current; views go fromCache.
    func goOffline() {
        timeline.network(online: false, cause: offlineCauseName)
        stopWatch()
        remote.scriptedNetworkChanged(online: false)
        remote.releaseHeldTargets()
        queries.markAllNotCurrent()
        updateViews()
        raiseOnlineState()
        backend.operations.record(.network(client: id, online: false))
    }

    /// Why the client is offline, as its timeline says it.
    private var offlineCauseName: String {
        if !remote.network.online { return "networkSwitch" }
        if remote.offlineCauses.contains(.storageFailure) { return "storageFailure" }
        if remote.offlineCauses.contains(.noPrimaryTab) { return "noPrimaryTab" }
        return "watchStream"
    }

    /// enableNetwork: reconnect the watch, refetch every target (unless the gate holds them),
    /// and send the queued writes.
    func goOnline() {
        timeline.network(online: true)
        reconnect()
        backend.operations.record(.network(client: id, online: true))
    }

    /// The watch connects again (every target is fetched, or asked of the script) and queued
    /// writes are sent — unless a failed operation still holds the network down.
    func reconnect() {
        guard remote.canUseNetwork else { return }
        ensureWatch()
        remote.scriptedNetworkChanged(online: true)
        let ids = queries.serverListenerIDs
        if remote.isScripted {
            // The reopened stream asks for every target; the script answers.
        } else if remote.gates.holdWatch {
            remote.holdTargets(ids)
        } else if !ids.isEmpty {
            refreshTargets(ids)
        }
        raiseOnlineState()
        pumpWrites()
    }
}
