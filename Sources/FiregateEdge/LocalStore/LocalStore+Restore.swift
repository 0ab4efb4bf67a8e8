import FiregateBackend
import FiregateModel
import FiregateStore

/// What a persistent client saved, made whole again at start: the cache, the queue (split by
/// user), the targets and the index definitions.
extension LocalStore {
    /// Splits restored batches into the signed-in user's queue and the others' (by batch id).
    static func partition(_ all: MutationQueue, users: [Int64: String], current: String) -> (MutationQueue, [String: MutationQueue]) {
        var byUser: [String: [MutationBatch]] = [:]
        for batch in all.batches { byUser[users[batch.id] ?? "", default: []].append(batch) }
        var parked: [String: MutationQueue] = [:]
        for (user, batches) in byUser where user != current {
            var queue = MutationQueue()
            queue.restore(batches)
            parked[user] = queue
        }
        var mine = MutationQueue()
        mine.restore(byUser[current] ?? [])
        mine.reserveIDs(from: all.nextID)
        return (mine, parked)
    }

    /// The cache, queue and targets a persistent client saved.
    static func restored(_ snapshot: EdgeCacheStorage.Snapshot, database: DatabaseID)
        -> (RemoteDocumentCache, MutationQueue, WriteOutcomes<WriteState>, TargetCache)
    {
        var remote = RemoteDocumentCache()
        var sequences: [ResourcePath: Int64] = [:]
        for doc in snapshot.documents {
            if doc.found {
                remote.set(doc.path, .found(Document(path: doc.path, fields: doc.fields, createTime: doc.createTime, updateTime: doc.updateTime),
                                            committed: doc.committed))
            } else {
                remote.set(doc.path, .missing(version: doc.updateTime, committed: doc.committed))
            }
            sequences[doc.path] = doc.sequenceNumber
        }
        var targets: [String: TargetCache.Target] = [:]
        for target in snapshot.targets {
            targets[target.query] = TargetCache.Target(sequenceNumber: target.sequenceNumber, documents: Set(target.documents), synced: target.synced,
                                                       targetID: target.targetID, resumeToken: target.resumeToken, snapshotVersion: target.snapshotVersion,
                                                       savedResumeToken: target.resumeToken, savedSnapshotVersion: target.snapshotVersion)
        }
        var targetCache = TargetCache()
        targetCache.restore(targets: targets, documentSequence: sequences)
        LocalStore.restoreIndexes(snapshot.indexes, into: &remote, database: database)
        var batches: [MutationBatch] = []
        var states = WriteOutcomes<WriteState>()
        for (batchID, time, json) in snapshot.mutations {
            guard let items = json.arrayValue else { continue }
            let writes = items.compactMap { try? Write(json: $0, database: database) }
            batches.append(MutationBatch(id: batchID, localWriteTime: time, writes: writes))
            states.pending(batchID, .pending)
        }
        var queue = MutationQueue()
        queue.restore(batches)
        return (remote, queue, states, targetCache)
    }

    /// Rebuilds saved index definitions over a restored cache: entries are always built anew
    /// from the documents, so a damaged or half-written index can never be used.
    static func restoreIndexes(_ saved: JSON?, into remote: inout RemoteDocumentCache, database: DatabaseID) {
        guard let items = saved?.arrayValue, !items.isEmpty,
              let parsed = try? IndexConfiguration.parse(["indexes": .array(items)]) else { return }
        remote.indexes.configure(parsed, documents: remote.entries, database: database)
        for (index, item) in zip(parsed, items) where item["autoCreated"]?.boolValue == true {
            remote.indexes.markAutoCreated(index)
        }
    }
}
