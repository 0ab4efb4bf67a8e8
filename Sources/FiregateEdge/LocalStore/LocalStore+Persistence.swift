import FiregateBackend
import FiregateModel
import FiregateStore

/// The LocalStore's changes that are saved: each change and its save together, so no other code
/// writes to the client's storage.
extension LocalStore {
    func persistRemote(_ path: ResourcePath) {
        guard persistent, let storage else { return }
        let sequence = targetCache.documentSequence[path] ?? 0
        switch remoteDocuments[path] {
        case .found(let doc, let committed)?: storage.saveDocument(path, found: doc, committed: committed, version: doc.updateTime, sequenceNumber: sequence)
        case .missing(let version, let committed)?: storage.saveDocument(path, found: nil, committed: committed, version: version, sequenceNumber: sequence)
        case nil: storage.deleteDocuments([path])
        }
    }

    func persistSequence(_ path: ResourcePath) {
        if persistent { storage?.saveDocumentSequence(path, targetCache.documentSequence[path] ?? 0) }
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

    func persistBundles() {
        if persistent { storage?.saveBundles(bundles.json) }
    }

    func saveIndexes(_ definitions: JSON) {
        if persistent { storage?.saveIndexes(definitions) }
    }
}
