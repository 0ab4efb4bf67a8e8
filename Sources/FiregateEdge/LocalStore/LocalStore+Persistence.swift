import FiregateBackend
import FiregateModel
import FiregateStore

/// The LocalStore's changes that are saved: each change and its save together, so no other code
/// writes to the client's storage.
extension LocalStore {
    /// The live watch's word on a document (nil: it does not exist, as of `deletedAt` — a
    /// commit's time — or of now), taken by the same rule as the scripted watch's and a bundle's.
    mutating func acceptFromWatch(_ path: ResourcePath, _ document: Document?, deletedAt: Timestamp? = nil) {
        acceptRemote(path, document.map { .found($0, committed: false) } ?? .missing(version: deletedAt ?? clock.now()))
    }

    /// A document from either watch or a bundle, by the SDK's rule (populateDocumentChangeBuffer): taken
    /// when nothing is cached, when newer, or at the same version as one derived from an
    /// acknowledged write; "missing at version 0" (access lost) drops the document. Returns
    /// whether the cache changed.
    @discardableResult
    mutating func acceptRemote(_ path: ResourcePath, _ update: RemoteDocument) -> Bool {
        targetCache.touch(path)
        if case .missing(let version, _) = update, version == .zero {
            guard remoteDocuments[path] != nil else { return false }
            remoteDocuments.set(path, nil)
            persistRemote(path)
            return true
        }
        if let existing = remoteDocuments[path] {
            let derivedFromWrite = switch existing {
            case .found(_, let committed), .missing(_, let committed): committed
            }
            guard update.version > existing.version || (update.version == existing.version && derivedFromWrite) else { return false }
        }
        remoteDocuments.set(path, update)
        persistRemote(path)
        return true
    }

    func persistRemote(_ path: ResourcePath) {
        guard persistent, let storage else { return }
        let sequence = targetCache.documentSequence[path] ?? 0
        switch remoteDocuments[path] {
        case .found(let doc, let committed)?: storage.saveDocument(path, found: doc, committed: committed, version: doc.updateTime, sequenceNumber: sequence)
        case .missing(let version, let committed)?: storage.saveDocument(path, found: nil, committed: committed, version: version, sequenceNumber: sequence)
        case nil: storage.deleteDocuments([path])
        }
    }

    /// The cached document was referenced by the current operation (LRU bookkeeping).
    mutating func touch(_ path: ResourcePath) {
        guard remoteDocuments[path] != nil else { return }
        targetCache.touch(path)
        persistSequence(path)
    }

    func persistSequence(_ path: ResourcePath) {
        if persistent { storage?.saveDocumentSequence(path, targetCache.documentSequence[path] ?? 0) }
    }

    /// Saves a target: whole, or (`changed`: the keys that joined and left its result since it was
    /// last saved) its position and just those keys, so a commit costs its change, not the size
    /// of the result.
    mutating func persistTarget(_ queryID: String, changed: (joined: Set<ResourcePath>, left: Set<ResourcePath>)? = nil) {
        // A memory cache is its own persistence: what it stored is what a re-listen finds.
        targetCache.noteSaved(queryID)
        guard persistent, let storage else { return }
        if let changed, let target = targetCache.targets[queryID] {
            let documents = target.documents
            storage.saveTargetPosition(.init(query: queryID, sequenceNumber: target.sequenceNumber, synced: target.synced, targetID: target.targetID,
                                             resumeToken: target.resumeToken, snapshotVersion: target.snapshotVersion),
                                       joined: Array(changed.joined), left: Array(changed.left)) { Array(documents) }
        } else if let target = targetCache.targets[queryID] {
            storage.saveTarget(EdgeCacheStorage.StoredTarget(query: queryID, sequenceNumber: target.sequenceNumber, synced: target.synced,
                                                             documents: Array(target.documents), targetID: target.targetID,
                                                             resumeToken: target.resumeToken, snapshotVersion: target.snapshotVersion))
        } else {
            storage.deleteTargets([queryID])
        }
    }

    func saveSettings(_ json: JSON) {
        if persistent { storage?.saveSettings(json) }
    }

    /// Forgets everything saved (the settings too when the client is deleted).
    func clearStorage(includingSettings: Bool) {
        storage?.clear(includingSettings: includingSettings)
    }

    /// Saves a queued batch; `done` is called once it is on disk (at once for a memory client).
    func saveMutation(_ batch: MutationBatch, writes: JSON, uid: String, done: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        guard persistent, let storage else { return done(.success(())) }
        storage.saveMutation(id: batch.id, localWriteTime: batch.localWriteTime, writes: writes, uid: uid, onDurable: done)
    }

    /// What removes a batch from the disk in the same transaction as its commit.
    func mutationRemoval(_ batchID: Int64) -> (any CommitCompanion)? {
        storage?.mutationRemoval(id: batchID)
    }

    func deleteSavedMutation(_ batchID: Int64) {
        storage?.deleteMutation(id: batchID)
    }

    func deleteSavedTargets(_ queryIDs: [String]) {
        if persistent, !queryIDs.isEmpty { storage?.deleteTargets(queryIDs) }
    }

    func saveIndexes(_ definitions: JSON) {
        if persistent { storage?.saveIndexes(definitions) }
    }
}
