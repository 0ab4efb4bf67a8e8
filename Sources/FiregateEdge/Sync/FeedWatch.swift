import FiregateBackend
import FiregateModel

/// The live watch's server side: what the SDK's WatchChangeAggregator does for a watch that is
/// the backend's own change feed. For each target with a server result it keeps the feed
/// sequence that result reflects and, for a windowed query, the server's whole match set; and
/// the documents a bundle brought that the server has not been asked about yet. It turns a
/// commit into a remote event keyed by target.
///
/// A target's keys are not kept here: the target cache (`TargetCache`) is their one record, and
/// each remote event this builds keeps it current.
struct FeedWatch {
    /// A target's server result, as far as the feed goes.
    struct ServerResult {
        /// The feed sequence the result reflects; later commits are applied to it one by one.
        var sequence: Int64
        /// A windowed query's (limit or offset) whole match set, so a document leaving the
        /// window lets the next one in. Unwindowed queries need only their keys.
        var matches: QueryMatches?
    }

    /// A target that listens to the live watch: its query and, once allocated, its target id.
    struct Target {
        let queryID: String
        let query: Query
        let targetID: Int?
    }

    /// Server results by query id (a target's canonical id). A target without one is fetched
    /// whole on its next change.
    private(set) var results: [String: ServerResult] = [:]
    /// Documents a bundle brought into a current target's query that the server has not been
    /// asked about: they are in limbo until the target's next server result.
    private(set) var unresolved: [String: Set<ResourcePath>] = [:]

    /// Whether the commit is news for the target: it has a server result older than the commit.
    func isBehind(_ queryID: String, _ record: CommitRecord) -> Bool {
        results[queryID].map { record.sequence > $0.sequence } ?? false
    }

    func hasResult(_ queryID: String) -> Bool { results[queryID] != nil }

    /// A fetched server result (the target's keys went into the target cache with it): later
    /// commits apply to it. `unresolved`: the documents its view still shows that the server no
    /// longer lists, whose lookups follow.
    mutating func takeServerResult(_ queryID: String, sequence: Int64, matches: QueryMatches?, unresolved paths: Set<ResourcePath>) {
        results[queryID] = ServerResult(sequence: sequence, matches: matches)
        unresolved[queryID] = paths.isEmpty ? nil : paths
    }

    /// Documents in limbo for `queryID` until its next server result.
    mutating func markUnresolved(_ paths: Set<ResourcePath>, for queryID: String) {
        guard !paths.isEmpty else { return }
        unresolved[queryID, default: []].formUnion(paths)
    }

    /// The lookups of `paths` answered.
    mutating func resolve(_ paths: Set<ResourcePath>, for queryID: String) {
        unresolved[queryID]?.subtract(paths)
        if unresolved[queryID]?.isEmpty == true { unresolved[queryID] = nil }
    }

    /// The target no longer listens to the server.
    mutating func forget(_ queryID: String) {
        results[queryID] = nil
        unresolved[queryID] = nil
    }

    /// The feed stopped: every server result falls behind, and the next one starts anew.
    mutating func dropResults() {
        results.removeAll()
    }

    mutating func removeAll() {
        results.removeAll()
        unresolved.removeAll()
    }

    /// A commit's effect on `targets` (each behind the commit): each target's match set takes
    /// the changes, and the commit's documents and the targets' joined and left keys (`keys`:
    /// what the target cache holds for a query id) make one remote event. Returns it with the
    /// documents it brings.
    mutating func remoteEvent(for record: CommitRecord, targets: [Target], keys: (String) -> Set<ResourcePath>,
                              database: DatabaseID) -> (event: RemoteEvent, changed: Set<ResourcePath>) {
        var event = RemoteEvent(snapshotVersion: .zero, targetChanges: [:], targetMismatches: [:], documentUpdates: [:], resolvedLimboDocuments: [])
        let serverKeys = Dictionary(targets.map { ($0.queryID, keys($0.queryID)) }, uniquingKeysWith: { first, _ in first })
        var changed = Set<ResourcePath>()
        for change in record.changes where targets.contains(where: { $0.query.containsPath(change.path) || serverKeys[$0.queryID]?.contains(change.path) == true }) {
            event.documentUpdates[change.path] = change.after.map { .found($0, committed: false) } ?? .missing(version: record.commitTime)
            changed.insert(change.path)
        }
        for target in targets {
            let (joined, left) = keyChanges(of: target, by: record, serverKeys: serverKeys[target.queryID] ?? [], database: database)
            if unresolved[target.queryID] != nil { resolve(Set(record.changes.map(\.path)), for: target.queryID) }
            results[target.queryID]?.sequence = record.sequence
            if let targetID = target.targetID {
                event.targetChanges[targetID, default: TargetChange(resumeToken: "", current: true)].added.formUnion(joined)
                event.targetChanges[targetID]?.removed.formUnion(left)
            }
        }
        return (event, changed)
    }

    /// The keys that join and leave the target's server result with the commit: its match
    /// set's window when windowed, else the query run on each changed document.
    private mutating func keyChanges(of target: Target, by record: CommitRecord, serverKeys: Set<ResourcePath>,
                                     database: DatabaseID) -> (joined: Set<ResourcePath>, left: Set<ResourcePath>) {
        var joined = Set<ResourcePath>(), left = Set<ResourcePath>()
        // Out of the dictionary while it changes, so the match set is not copied.
        if var matches = results[target.queryID]?.matches {
            results[target.queryID]?.matches = nil
            for change in record.changes { matches.apply(path: change.path, before: change.before, after: change.after) }
            let window = Set(matches.window.map(\.path))
            joined = window.subtracting(serverKeys)
            left = serverKeys.subtracting(window)
            results[target.queryID]?.matches = matches
            return (joined, left)
        }
        let query = target.query
        for change in record.changes where query.containsPath(change.path) || serverKeys.contains(change.path) {
            if let after = change.after, query.matches(after, database: database), query.withinBounds(after, database: database) {
                if !serverKeys.contains(change.path) { joined.insert(change.path) }
            } else if serverKeys.contains(change.path) {
                left.insert(change.path)
            }
        }
        return (joined, left)
    }
}
