import FiregateModel

/// Where what the server says enters the cache, whichever watch said it (the live one on the
/// backend's feed, or the test's script): the SDK's localStoreApplyRemoteEvent.
extension LocalStore {
    /// Each target takes its added and removed keys and its resume token (reset after an
    /// existence-filter mismatch); then each document is taken by the remote-document rule
    /// (`acceptRemote`). Returns the documents whose cached version changed.
    @discardableResult
    mutating func applyRemoteEvent(_ event: RemoteEvent) -> Set<ResourcePath> {
        targetCache.beginOperation()
        targetCache.noteRemoteSnapshot(event.snapshotVersion)
        for (targetID, change) in event.targetChanges.sorted(by: { $0.key < $1.key }) {
            guard let queryID = targetCache.queryIDs[targetID], let old = targetCache.targets[queryID] else { continue }
            let joined = change.added.subtracting(old.documents), left = change.removed.intersection(old.documents)
            for path in targetCache.applyServerChanges(queryID, joined: joined, left: left) where remoteDocuments[path] != nil { persistSequence(path) }
            if event.targetMismatches[targetID] != nil {
                targetCache.setResumeToken(queryID, "", version: .zero)
            } else if !change.resumeToken.isEmpty {
                targetCache.setResumeToken(queryID, change.resumeToken, version: event.snapshotVersion)
            }
            // As the SDK: a new token alone is written at most every 5 minutes (shouldPersistTargetData).
            let changedDocuments = !change.added.isEmpty || !change.modified.isEmpty || !change.removed.isEmpty
            let tokenAge = event.snapshotVersion.microseconds - old.snapshotVersion.microseconds
            if old.resumeToken.isEmpty || changedDocuments || tokenAge >= 300_000_000 {
                // A target with a saved result saves only what changed, so the cost follows the change.
                persistTarget(queryID, changed: old.synced ? (joined, left) : nil)
            }
        }
        var changed = Set<ResourcePath>()
        for (path, update) in event.documentUpdates where acceptRemote(path, update) { changed.insert(path) }
        return changed
    }
}
