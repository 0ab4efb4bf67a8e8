import FiregateBackend
import FiregateModel
import FiregateStore

/// The watch side of sync: which listener targets the backend's commits touch, fetching their
/// server results, the watch gate, and the online/offline transitions.
extension EdgeClient {
    func ensureWatch() {
        updateWatchInterest()
        guard remote.watch == nil, remote.scripted == nil, remote.canUseNetwork, !terminated, queries.states.values.contains(where: { !$0.options.cacheOnly }) else { return }
        remote.watch = WatchConnection.open(on: database, for: self, interest: remote.watchInterest)
        remote.watch?.rulesGeneration = backend.rules.generation
    }

    /// Keeps the watch's interest equal to the listeners' queries (called when they change,
    /// before a new listener's first server fetch, so no commit after it is missed).
    func updateWatchInterest() {
        remote.watchInterest.set(queries.states.values.filter { !$0.options.cacheOnly }.map(\.query))
    }

    func stopWatch() {
        remote.watch?.close()
        remote.watch = nil
        // Without the feed, server results fall behind: the next one starts them anew.
        for listenerID in queries.states.keys {
            queries.states[listenerID]?.serverSequence = nil
            queries.states[listenerID]?.matches = nil
        }
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
            for (listenerID, entry) in queries.states where !entry.options.cacheOnly {
                if record.changes.contains(where: { entry.query.containsPath($0.path) || entry.serverPaths.contains($0.path) }) {
                    touched.append(listenerID)
                }
            }
            // Targets with a server result follow the commit's changes, not a new query run.
            if !remote.gates.holdWatch {
                let incremental = touched.filter { queries.states[$0]?.serverSequence != nil }
                if !incremental.isEmpty { applyChanges(record, to: incremental) }
                touched.removeAll { queries.states[$0]?.serverSequence != nil }
            }
        case .overflow:
            touched = queries.states.filter { !$0.value.options.cacheOnly }.map(\.key)
        case .closed:
            // The database was reset: reconnect and refetch everything.
            stopWatch()
            ensureWatch()
            touched = queries.states.filter { !$0.value.options.cacheOnly }.map(\.key)
        case .heartbeat:
            // The rules changed (the feed wakes every listen): every listen is judged again.
            guard let generation = remote.watch?.rulesGeneration, generation != backend.rules.generation else { return }
            remote.watch?.rulesGeneration = backend.rules.generation
            touched = queries.states.filter { !$0.value.options.cacheOnly }.map(\.key)
        }
        guard !touched.isEmpty else { return }
        if remote.gates.holdWatch {
            remote.heldTargets.formUnion(touched)
        } else {
            refreshTargets(touched.sorted())
        }
    }

    /// `gates:releaseWatch`: deliver everything held as one consistent snapshot. Every target
    /// is brought to the backend's current state, so a commit whose feed event is still on its
    /// way to this client is included too.
    public func releaseWatch() {
        guard remote.network.online, remote.scripted == nil else { return }
        remote.heldTargets.removeAll()
        let ids = queries.states.filter { !$0.value.options.cacheOnly }.map(\.key).sorted()
        if !ids.isEmpty { refreshTargets(ids) }
    }

    /// A commit's effect on targets that already have their server result: each target's match
    /// set takes the changes, and the commit's documents and the targets' joined and left keys
    /// enter the cache as one remote event; every view is updated with those documents only —
    /// the cost follows the change, not the size of the results.
    func applyChanges(_ record: CommitRecord, to ids: [Int]) {
        // A target refreshed after this commit already holds it.
        let behind = ids.filter { queries.states[$0].map { record.sequence > ($0.serverSequence ?? .max) } ?? false }
        guard !behind.isEmpty else { return }
        var event = RemoteEvent(snapshotVersion: .zero, targetChanges: [:], targetMismatches: [:], documentUpdates: [:], resolvedLimboDocuments: [])
        var changed = Set<ResourcePath>()
        for change in record.changes where behind.contains(where: { id in
            queries.states[id].map { $0.query.containsPath(change.path) || $0.serverPaths.contains(change.path) } ?? false
        }) {
            event.documentUpdates[change.path] = change.after.map { .found($0, committed: false) } ?? .missing(version: record.commitTime)
            changed.insert(change.path)
        }
        let database = settings.databaseID
        for listenerID in behind {
            // Out of the dictionary while it changes, so its match set is not copied.
            guard var entry = queries.states.removeValue(forKey: listenerID) else { continue }
            var joined = Set<ResourcePath>(), left = Set<ResourcePath>()
            if var matches = entry.matches {
                for change in record.changes { matches.apply(path: change.path, before: change.before, after: change.after) }
                let window = Set(matches.window.map(\.path))
                joined = window.subtracting(entry.serverPaths)
                left = entry.serverPaths.subtracting(window)
                entry.matches = matches
            } else {
                for change in record.changes where entry.query.containsPath(change.path) || entry.serverPaths.contains(change.path) {
                    if let after = change.after, entry.query.matches(after, database: database), entry.query.withinBounds(after, database: database) {
                        if !entry.serverPaths.contains(change.path) { joined.insert(change.path) }
                    } else if entry.serverPaths.contains(change.path) {
                        left.insert(change.path)
                    }
                }
            }
            entry.serverPaths.formUnion(joined)
            entry.serverPaths.subtract(left)
            if !entry.unresolved.isEmpty { for change in record.changes { entry.unresolved.remove(change.path) } }
            entry.serverSequence = record.sequence
            entry.current = true
            if let targetID = local.targetCache.targets[entry.queryID]?.targetID {
                event.targetChanges[targetID, default: TargetChange(resumeToken: "", current: true)].added.formUnion(joined)
                event.targetChanges[targetID]?.removed.formUnion(left)
            }
            queries.states[listenerID] = entry
        }
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
        var results: [(listenerID: Int, seen: Set<ResourcePath>, sequence: Int64, matches: QueryMatches, limbo: Set<ResourcePath>)] = []
        for listenerID in ids {
            guard let entry = queries.states[listenerID] else { continue }
            if let judge, let denial = EdgeClient.denial(of: entry.query, by: judge, in: database) {
                endListeners(ofQuery: entry.queryID, with: denial)
                continue
            }
            let (matches, sequence) = database.matches(entry.query)
            var seen = Set<ResourcePath>()
            for doc in matches.window {
                event.documentUpdates[doc.path] = .found(doc, committed: false)
                seen.insert(doc.path)
            }
            let shown = Set(entry.view.documents.lazy.filter { !$0.hasLocalMutations }.map(\.document.path))
            let limbo = shown.subtracting(seen)
            for path in entry.serverPaths.union(shown).subtracting(seen) where event.documentUpdates[path] == nil {
                let doc = (try? database.get(path).value) ?? nil
                let update: RemoteDocument = doc.map { .found($0, committed: false) } ?? .missing(version: local.clock.now())
                if limbo.contains(path) { lookups.documentUpdates[path] = update } else { event.documentUpdates[path] = update }
            }
            if let target = local.targetCache.targets[entry.queryID] {
                event.targetChanges[target.targetID] = TargetChange(resumeToken: "", current: true, added: seen.subtracting(target.documents),
                                                                    removed: target.documents.subtracting(seen))
            }
            results.append((listenerID, seen, sequence, matches, limbo))
        }
        // A document in limbo for one target but in another's result is known already.
        for path in lookups.documentUpdates.keys where event.documentUpdates[path] != nil { lookups.documentUpdates[path] = nil }
        local.applyRemoteEvent(event)
        for (listenerID, seen, sequence, matches, limbo) in results {
            guard var entry = queries.states.removeValue(forKey: listenerID) else { continue }
            entry.serverPaths = seen
            entry.unresolved = limbo.filter { lookups.documentUpdates[$0] != nil }
            if !entry.current, let targetID = local.targetCache.targets[entry.queryID]?.targetID {
                broadcast(TabCoordinator.targetNotification(targetID, "current"))
            }
            entry.current = true
            entry.serverSequence = sequence
            entry.matches = entry.query.limit != nil || entry.query.offset > 0 ? matches : nil
            queries.states[listenerID] = entry
        }
        updateViews()
        guard !lookups.documentUpdates.isEmpty else { return }
        // The limbo documents' lookups answer.
        lookups.resolvedLimboDocuments = Set(lookups.documentUpdates.keys)
        local.applyRemoteEvent(lookups)
        for (listenerID, _, _, _, limbo) in results where !limbo.isEmpty {
            queries.states[listenerID]?.unresolved.subtract(lookups.resolvedLimboDocuments)
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
        remote.scripted?.networkChanged(online: false)
        remote.heldTargets.removeAll()
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
        remote.scripted?.networkChanged(online: true)
        let ids = queries.states.filter { !$0.value.options.cacheOnly }.map(\.key).sorted()
        if remote.scripted != nil {
            // The reopened stream asks for every target; the script answers.
        } else if remote.gates.holdWatch {
            remote.heldTargets.formUnion(ids)
        } else if !ids.isEmpty {
            refreshTargets(ids)
        }
        raiseOnlineState()
        pumpWrites()
    }
}
