import FiregateBackend
import FiregateModel

/// The mutation queues' side of the local store: a batch leaving the queue when the server
/// answers it, and documents leaving the cache.
extension LocalStore {
    /// Removes a batch from whichever user's queue holds it (an answer may arrive after the
    /// user changed).
    mutating func removeBatch(_ batchID: Int64) -> MutationBatch? {
        if let batch = mutationQueue.remove(batchID) { return batch }
        for user in Array(queuesByUser.keys) {
            guard let batch = queuesByUser[user]?.remove(batchID) else { continue }
            if queuesByUser[user]?.isEmpty == true { queuesByUser.removeValue(forKey: user) }
            return batch
        }
        return nil
    }

    /// The server committed the batch (whose commit removed it from the on-disk queue): drops it
    /// from the queue and keeps the committed version of each document until the watch confirms
    /// it. False when the batch was no longer queued.
    mutating func acknowledgeBatch(_ batch: MutationBatch, _ result: CommitResult, database: DatabaseID) -> Bool {
        guard removeBatch(batch.id) != nil else { return false }
        // The batch no longer holds its documents (removeMutationReference).
        targetCache.beginOperation()
        for path in batch.paths { targetCache.touch(path) }
        for path in batch.paths {
            let base = remoteDocuments[path]
            if let base, base.version >= result.commitTime {
                persistSequence(path)
                continue
            }
            var current = base?.document
            for write in batch.writes where write.path == path {
                if let outcome = try? write.apply(to: current, commitTime: result.commitTime, database: database, serverTime: { _ in .timestamp(result.commitTime) }) {
                    current = outcome.document
                }
            }
            remoteDocuments.set(path, current.map { .found($0, committed: true) } ?? .missing(version: result.commitTime, committed: true))
            persistRemote(path)
        }
        return true
    }

    /// The server refused the batch for good: drops it (from disk too), so the local view
    /// reverts. False when the batch was no longer queued.
    mutating func rejectBatch(_ batch: MutationBatch) -> Bool {
        guard removeBatch(batch.id) != nil else { return false }
        deleteSavedMutation(batch.id)
        targetCache.beginOperation()
        for path in batch.paths { touch(path) }
        return true
    }

    /// Removes a document from the cache (and from disk), counted as an eviction.
    mutating func evict(_ path: ResourcePath) {
        remoteDocuments.set(path, nil)
        targetCache.forget(path)
        cacheStatistics.evictions += 1
        persistRemote(path)
    }
}
