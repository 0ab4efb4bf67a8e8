import FiregateModel

/// What the aggregator may read of the rest of the client: the listened targets, and the
/// keys the local side holds for each (its views' synced documents; a lookup's document).
struct WatchTargetView {
    let targets: [Int: WatchTarget]
    let remoteKeys: (Int) -> Set<ResourcePath>
    let database: DatabaseID
}

/// Gathers watch messages between consistent snapshots and turns them into a RemoteEvent
/// (remote/watch_change.ts): per-target pending responses (a target is ignored while a listen
/// or unlisten request for it is unanswered), CURRENT and resume tokens, document changes, and
/// existence filters with their bloom filters. One per watch stream: a new stream starts empty.
struct WatchChangeAggregator {
    enum ChangeKind { case added, modified, removed }

    /// One target's state within the stream (the SDK's TargetState).
    struct TargetState {
        var pendingResponses = 0
        var current = false
        var resumeToken = ""
        var hasPendingChanges = true
        var changes: [ResourcePath: ChangeKind] = [:]

        var isPending: Bool { pendingResponses != 0 }

        mutating func updateResumeToken(_ token: String) {
            guard !token.isEmpty else { return }
            hasPendingChanges = true
            resumeToken = token
        }

        func targetChange() -> TargetChange {
            var change = TargetChange(resumeToken: resumeToken, current: current)
            for (path, kind) in changes {
                switch kind {
                case .added: change.added.insert(path)
                case .modified: change.modified.insert(path)
                case .removed: change.removed.insert(path)
                }
            }
            return change
        }

        mutating func clearPendingChanges() {
            hasPendingChanges = false
            changes.removeAll()
        }
    }

    private(set) var targetStates: [Int: TargetState] = [:]
    private var pendingDocumentUpdates: [ResourcePath: RemoteDocument] = [:]
    /// Every target a pending document was mentioned for (added or removed).
    private var pendingDocumentTargets: [ResourcePath: Set<Int>] = [:]
    /// The targets a pending document was added to.
    private var pendingDocumentAdds: [ResourcePath: Set<Int>] = [:]
    private var pendingTargetResets: [Int: TargetPurpose] = [:]

    /// A listen or unlisten request for the target went out; its answer is awaited.
    mutating func recordPendingRequest(_ targetID: Int) {
        targetStates[targetID, default: TargetState()].pendingResponses += 1
    }

    /// An ADD or REMOVE names a target with no request awaiting an answer (the SDK would
    /// fail an assertion): the id of the first such target.
    func unexpectedResponse(_ message: WatchMessage) -> Int? {
        guard case .targetChange(let kind, let ids, nil, _, _) = message, kind == .add || kind == .remove else { return nil }
        // Without ids it answers every active target, none of which awaits an answer.
        if ids.isEmpty, let active = targetStates.first(where: { !$0.value.isPending })?.key { return active }
        var remaining: [Int: Int] = [:]
        for id in ids {
            let left = remaining[id] ?? targetStates[id]?.pendingResponses ?? 0
            guard targetStates[id] == nil || left > 0 else { return id }
            remaining[id] = left - 1
        }
        return nil
    }

    mutating func removeTarget(_ targetID: Int) {
        targetStates[targetID] = nil
    }

    mutating func handle(_ message: WatchMessage, _ metadata: WatchTargetView) {
        switch message {
        case .targetChange(let kind, let ids, _, let token, _):
            handleTargetChange(kind, ids: ids, resumeToken: token, metadata)
        case .documentChange(let doc, let ids, let removedIDs):
            for id in ids { addDocument(doc, to: id, metadata) }
            for id in removedIDs { removeDocument(doc.path, from: id, update: .found(doc, committed: false), metadata) }
        case .documentDelete(let path, let removedIDs, let readTime):
            for id in removedIDs { removeDocument(path, from: id, update: .missing(version: readTime ?? .zero), metadata) }
        case .documentRemove(let path, let removedIDs):
            for id in removedIDs { removeDocument(path, from: id, update: nil, metadata) }
        case .filter(let targetID, let count, let names):
            handleExistenceFilter(targetID, count: count, unchangedNames: names, metadata)
        case .streamClose:
            break
        }
    }

    private mutating func handleTargetChange(_ kind: WatchMessage.TargetChangeKind, ids: [Int], resumeToken: String, _ metadata: WatchTargetView) {
        // No ids: every active target.
        let targets = ids.isEmpty ? targetStates.keys.filter { isActive($0, metadata) }.sorted() : ids
        for id in targets {
            // Targets this stream never asked for are ignored.
            guard var state = targetStates[id] else { continue }
            switch kind {
            case .noChange:
                if isActive(id, metadata) { state.updateResumeToken(resumeToken) }
            case .add:
                state.pendingResponses -= 1
                if !state.isPending { state.clearPendingChanges() }
                state.updateResumeToken(resumeToken)
            case .remove:
                state.pendingResponses -= 1
                if !state.isPending {
                    targetStates[id] = nil
                    continue
                }
            case .current:
                if isActive(id, metadata) {
                    state.hasPendingChanges = true
                    state.current = true
                    state.updateResumeToken(resumeToken)
                }
            case .reset:
                if isActive(id, metadata) {
                    // The SDK gives the RESET's token to the state the reset replaces, so it
                    // is lost; so here.
                    resetTarget(id, metadata)
                    continue
                }
            }
            targetStates[id] = state
        }
    }

    /// The target is listened to and no request for it is unanswered.
    func isActive(_ targetID: Int, _ metadata: WatchTargetView) -> Bool {
        if targetStates[targetID]?.isPending ?? false { return false }
        return metadata.targets[targetID] != nil
    }

    private func contains(_ targetID: Int, _ path: ResourcePath, _ metadata: WatchTargetView) -> Bool {
        metadata.remoteKeys(targetID).contains(path)
    }

    private mutating func addDocument(_ doc: Document, to targetID: Int, _ metadata: WatchTargetView) {
        guard isActive(targetID, metadata) else { return }
        let kind: ChangeKind = contains(targetID, doc.path, metadata) ? .modified : .added
        targetStates[targetID, default: TargetState()].hasPendingChanges = true
        targetStates[targetID]?.changes[doc.path] = kind
        pendingDocumentUpdates[doc.path] = .found(doc, committed: false)
        pendingDocumentTargets[doc.path, default: []].insert(targetID)
        pendingDocumentAdds[doc.path, default: []].insert(targetID)
    }

    /// The document left the target; `update` (when known) is what became of it.
    private mutating func removeDocument(_ path: ResourcePath, from targetID: Int, update: RemoteDocument?, _ metadata: WatchTargetView) {
        guard isActive(targetID, metadata) else { return }
        targetStates[targetID, default: TargetState()].hasPendingChanges = true
        if contains(targetID, path, metadata) {
            targetStates[targetID]?.changes[path] = .removed
        } else {
            // Never held locally: a pending add is undone.
            targetStates[targetID]?.changes[path] = nil
        }
        pendingDocumentTargets[path, default: []].insert(targetID)
        if let update { pendingDocumentUpdates[path] = update }
    }

    /// Starts the target over: everything it held is removed unless watch sends it again.
    private mutating func resetTarget(_ targetID: Int, _ metadata: WatchTargetView) {
        targetStates[targetID] = TargetState()
        for path in metadata.remoteKeys(targetID) { removeDocument(path, from: targetID, update: nil, metadata) }
    }

    private func currentCount(_ targetID: Int, _ metadata: WatchTargetView) -> Int {
        let change = (targetStates[targetID] ?? TargetState()).targetChange()
        return metadata.remoteKeys(targetID).count + change.added.count - change.removed.count
    }

    private mutating func handleExistenceFilter(_ targetID: Int, count: Int, unchangedNames: JSON?, _ metadata: WatchTargetView) {
        guard isActive(targetID, metadata), let target = metadata.targets[targetID] else { return }
        if let path = target.lookupPath {
            // A document target: 0 means the document does not exist.
            if count == 0 { removeDocument(path, from: targetID, update: .missing(version: .zero), metadata) }
            return
        }
        let current = currentCount(targetID, metadata)
        guard current != count else { return }
        var bloomApplied = false
        if let filter = BloomFilter(json: unchangedNames) {
            // Documents the server no longer has leave the target; if that explains the count,
            // no re-query is needed.
            var removedCount = 0
            for path in metadata.remoteKeys(targetID).sorted()
            where !filter.mightContain(metadata.database.resourceName(path)) {
                removeDocument(path, from: targetID, update: nil, metadata)
                removedCount += 1
            }
            if count == current - removedCount { return }
            bloomApplied = true
        }
        resetTarget(targetID, metadata)
        pendingTargetResets[targetID] = bloomApplied ? .existenceFilterMismatchBloom : .existenceFilterMismatch
    }

    /// The consistent snapshot at `version`: every active target's pending changes, and the
    /// documents to take in. The aggregator starts gathering the next one.
    mutating func createRemoteEvent(at version: Timestamp, _ metadata: WatchTargetView) -> RemoteEvent {
        var changes: [Int: TargetChange] = [:]
        for id in targetStates.keys.sorted() {
            guard isActive(id, metadata), let target = metadata.targets[id] else { continue }
            if let path = target.lookupPath, targetStates[id]?.current == true,
               !(pendingDocumentAdds[path]?.contains(id) ?? false), !contains(id, path, metadata) {
                // A current document target that never sent its document: it does not exist.
                removeDocument(path, from: id, update: .missing(version: version), metadata)
            }
            if targetStates[id]?.hasPendingChanges == true {
                changes[id] = targetStates[id]!.targetChange()
                targetStates[id]!.clearPendingChanges()
            }
        }
        var resolvedLimbo = Set<ResourcePath>()
        for (path, ids) in pendingDocumentTargets
        where !ids.contains(where: { metadata.targets[$0].map { isActive($0.id, metadata) && $0.purpose != .limboResolution } ?? false }) {
            resolvedLimbo.insert(path)
        }
        let event = RemoteEvent(snapshotVersion: version, targetChanges: changes, targetMismatches: pendingTargetResets,
                                documentUpdates: pendingDocumentUpdates, resolvedLimboDocuments: resolvedLimbo)
        pendingDocumentUpdates.removeAll()
        pendingDocumentTargets.removeAll()
        pendingDocumentAdds.removeAll()
        pendingTargetResets.removeAll()
        return event
    }
}
