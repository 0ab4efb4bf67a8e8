import FiregateBackend
import FiregateModel

/// The watch side of sync: which listener targets the backend's commits touch, fetching their
/// server results, the watch gate, and the online/offline transitions.
extension EdgeClient {
    func ensureWatch() {
        guard watch == nil, network.online, !terminated, listeners.values.contains(where: { !$0.options.cacheOnly }) else { return }
        watch = WatchConnection.open(on: database, for: self)
    }

    func stopWatch() {
        watch?.close()
        watch = nil
    }

    /// A backend commit (or a feed condition) reached this client.
    func onWatchEvent(_ event: FeedEvent) {
        guard network.online, watch != nil else { return }
        var touched: [Int] = []
        switch event {
        case .commit(let record):
            for (listenerID, entry) in listeners where !entry.options.cacheOnly {
                if record.changes.contains(where: { entry.query.containsPath($0.path) || entry.serverPaths.contains($0.path) }) {
                    touched.append(listenerID)
                }
            }
        case .overflow:
            touched = listeners.filter { !$0.value.options.cacheOnly }.map(\.key)
        case .closed:
            // The database was reset: reconnect and refetch everything.
            stopWatch()
            ensureWatch()
            touched = listeners.filter { !$0.value.options.cacheOnly }.map(\.key)
        case .heartbeat:
            return
        }
        guard !touched.isEmpty else { return }
        if gates.holdWatch {
            heldTargets.formUnion(touched)
        } else {
            refreshTargets(touched.sorted())
        }
    }

    /// `gates:releaseWatch`: deliver everything held as one consistent snapshot.
    public func releaseWatch() {
        guard network.online, !heldTargets.isEmpty else { return }
        let ids = heldTargets.sorted()
        heldTargets.removeAll()
        refreshTargets(ids)
    }

    /// Fetches the server result of each listener's target, folds it into the remote cache,
    /// marks the targets current, then updates every view once.
    func refreshTargets(_ ids: [Int]) {
        let database = self.database
        for listenerID in ids {
            guard var entry = listeners[listenerID] else { continue }
            guard let result = try? database.runQuery(entry.query).value.documents else { continue }
            var seen = Set<ResourcePath>()
            for doc in result {
                acceptFromWatch(doc.path, doc)
                seen.insert(doc.path)
            }
            // Documents that left the target: learn what became of them (limbo resolution).
            for path in entry.serverPaths.subtracting(seen) {
                let doc = (try? database.get(path).value) ?? nil
                acceptFromWatch(path, doc)
            }
            entry.serverPaths = seen
            entry.current = true
            listeners[listenerID] = entry
            if !syncedQueries.contains(entry.query.canonicalID) {
                syncedQueries.insert(entry.query.canonicalID)
                if settings.persistence == .persistent { storage?.saveSyncedQuery(entry.query.canonicalID) }
            }
        }
        updateViews()
    }

    /// The server's version of a document replaces the cached one (nil: it does not exist).
    func acceptFromWatch(_ path: ResourcePath, _ document: Document?) {
        let entry: RemoteDocument = document.map { .found($0, committed: false) } ?? .missing(version: backend.clock.now())
        if let existing = remote[path] {
            // Never go back to an older server version; a committed local version is confirmed
            // (or superseded) by an equal or newer one.
            if existing.version > entry.version, document != nil { return }
            if existing == entry { return }
            if case .missing = existing, document == nil { return }
        }
        remote.set(path, entry)
        persistRemote(path)
    }

    func persistRemote(_ path: ResourcePath) {
        guard settings.persistence == .persistent, let storage else { return }
        switch remote[path] {
        case .found(let doc, let committed)?: storage.saveDocument(path, found: doc, committed: committed, version: doc.updateTime)
        case .missing(let version)?: storage.saveDocument(path, found: nil, committed: false, version: version)
        case nil: break
        }
    }

    /// disableNetwork (or injected loss): every target stops being current; views go fromCache.
    func goOffline() {
        stopWatch()
        heldTargets.removeAll()
        for listenerID in listeners.keys { listeners[listenerID]?.current = false }
        updateViews()
        raiseOnlineState()
    }

    /// enableNetwork: reconnect the watch, refetch every target (unless the gate holds them),
    /// and send the queued writes.
    func goOnline() {
        ensureWatch()
        let ids = listeners.filter { !$0.value.options.cacheOnly }.map(\.key).sorted()
        if gates.holdWatch {
            heldTargets.formUnion(ids)
        } else if !ids.isEmpty {
            refreshTargets(ids)
        }
        raiseOnlineState()
        pumpWrites()
    }
}
