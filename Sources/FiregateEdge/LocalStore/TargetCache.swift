import FiregateModel

/// The SDK's target cache with its LRU bookkeeping (local/target_cache.ts and the LRU
/// reference delegate): every query the client has listened to, keyed by canonical id, with
/// the documents of its last server result and its sequence number; and the sequence numbers
/// of documents (the SDK's sentinel rows), which say when each was last referenced.
///
/// Sequence numbers come from one counter that advances once per local-store operation
/// (listen, release, remote event, write acknowledgement, collection): the later an
/// operation touched a target or document, the larger its number.
public struct TargetCache: Sendable {
    public struct Target: Sendable, Equatable {
        public var sequenceNumber: Int64
        /// The documents the server last said match the target (its remote keys).
        public var documents: Set<ResourcePath>
        /// Whether a server result was ever received (the SDK's hasCachedResults).
        public var synced: Bool
        /// The SDK's target id: even, from 2, never reused while the target is kept.
        public var targetID: Int = 0
        /// The resume token and version of the last snapshot that included the target.
        public var resumeToken = ""
        public var snapshotVersion = Timestamp.zero
        /// The token and version last written to disk: a new token alone is written only now
        /// and then, and an app restart resumes from what was written.
        public var savedResumeToken = ""
        public var savedSnapshotVersion = Timestamp.zero
    }

    public private(set) var targets: [String: Target] = [:]
    public private(set) var documentSequence: [ResourcePath: Int64] = [:]
    /// How many targets hold each document, so "is it in any target" is O(1).
    private var holders: [ResourcePath: Int] = [:]
    /// Query ids by target id.
    public private(set) var queryIDs: [Int: String] = [:]
    /// The largest target id given out (TargetIdGenerator: the next is 2 more).
    public private(set) var highestTargetID = 0
    /// The version of the last consistent snapshot watch delivered: an older one is ignored.
    public private(set) var lastRemoteSnapshotVersion = Timestamp.zero
    /// The sequence number of the current operation.
    public private(set) var current: Int64 = 0
    /// Approximate bytes of the target cache (each target's query id, overhead and keys),
    /// kept up to date as targets change.
    public private(set) var byteSize = 0

    static func size(of queryID: String) -> Int { queryID.utf8.count + 32 }

    public init() {}

    /// Starts a new operation: later references get a larger sequence number.
    public mutating func beginOperation() {
        current += 1
    }

    public func hasCachedResults(_ queryID: String) -> Bool { targets[queryID]?.synced ?? false }

    /// A listen allocates the target; an existing one keeps its number (allocateTarget).
    public mutating func allocate(_ queryID: String) {
        guard targets[queryID] == nil else { return }
        highestTargetID += 2
        targets[queryID] = Target(sequenceNumber: current, documents: [], synced: false, targetID: highestTargetID)
        queryIDs[highestTargetID] = queryID
        byteSize += TargetCache.size(of: queryID)
    }

    public mutating func noteRemoteSnapshot(_ version: Timestamp) {
        if version > lastRemoteSnapshotVersion { lastRemoteSnapshotVersion = version }
    }

    /// The target as written to disk now.
    public mutating func noteSaved(_ queryID: String) {
        guard let target = targets[queryID] else { return }
        targets[queryID]?.savedResumeToken = target.resumeToken
        targets[queryID]?.savedSnapshotVersion = target.snapshotVersion
    }

    /// An app restart (or a failed write of one target): targets resume from the token on disk.
    public mutating func revertToSaved(_ queryID: String? = nil) {
        for (id, target) in targets where queryID == nil || id == queryID {
            targets[id]?.resumeToken = target.savedResumeToken
            targets[id]?.snapshotVersion = target.savedSnapshotVersion
        }
    }

    public func target(id targetID: Int) -> Target? { queryIDs[targetID].flatMap { targets[$0] } }

    /// A snapshot's resume token for the target (kept only when watch sent one), or a reset
    /// after an existence-filter mismatch (`token` "" clears it).
    public mutating func setResumeToken(_ queryID: String, _ token: String, version: Timestamp) {
        targets[queryID]?.resumeToken = token
        targets[queryID]?.snapshotVersion = version
    }

    /// The last listener of a query went away (releaseTarget → removeTarget).
    public mutating func release(_ queryID: String) {
        targets[queryID]?.sequenceNumber = current
    }

    /// A server result for the target: its keys become `documents`; documents that join or
    /// leave the target are referenced now (addReference / removeReference) and returned.
    @discardableResult
    public mutating func applyServerResult(_ queryID: String, documents: Set<ResourcePath>, synced: Bool = true) -> Set<ResourcePath> {
        allocate(queryID)
        var target = targets[queryID]!
        let joined = documents.subtracting(target.documents), left = target.documents.subtracting(documents)
        for path in joined {
            holders[path, default: 0] += 1
            documentSequence[path] = current
            byteSize += DocumentLimits.nameSize(path)
        }
        for path in left {
            release(holderOf: path)
            documentSequence[path] = current
            byteSize -= DocumentLimits.nameSize(path)
        }
        target.documents = documents
        target.synced = synced
        target.sequenceNumber = current
        targets[queryID] = target
        return joined.union(left)
    }

    /// A commit's effect on a target's server result: `joined` entered it, `left` left it (the
    /// caller knows which, so the cost follows the change). Returns the documents whose
    /// sequence moved, as `applyServerResult` does.
    public mutating func applyServerChanges(_ queryID: String, joined: Set<ResourcePath>, left: Set<ResourcePath>) -> Set<ResourcePath> {
        allocate(queryID)
        for path in joined where targets[queryID]!.documents.insert(path).inserted {
            holders[path, default: 0] += 1
            documentSequence[path] = current
            byteSize += DocumentLimits.nameSize(path)
        }
        for path in left where targets[queryID]!.documents.remove(path) != nil {
            release(holderOf: path)
            documentSequence[path] = current
            byteSize -= DocumentLimits.nameSize(path)
        }
        targets[queryID]!.synced = true
        targets[queryID]!.sequenceNumber = current
        return joined.union(left)
    }

    /// A document was referenced outside targets: a write settled (removeMutationReference),
    /// a view stopped showing it, a one-time read or limbo lookup cached it.
    public mutating func touch(_ path: ResourcePath) {
        documentSequence[path] = current
    }

    /// Whether some target (active or not) holds the document.
    public func isInTarget(_ path: ResourcePath) -> Bool { holders[path] != nil }

    /// Removes a target; its documents are no longer held by it.
    public mutating func remove(_ queryID: String) {
        guard let target = targets.removeValue(forKey: queryID) else { return }
        queryIDs[target.targetID] = nil
        byteSize -= TargetCache.size(of: queryID)
        for path in target.documents {
            release(holderOf: path)
            byteSize -= DocumentLimits.nameSize(path)
        }
    }

    /// Forgets a document entirely (collected).
    public mutating func forget(_ path: ResourcePath) {
        documentSequence[path] = nil
    }

    public mutating func removeAll() {
        targets.removeAll()
        documentSequence.removeAll()
        holders.removeAll()
        queryIDs.removeAll()
        highestTargetID = 0
        lastRemoteSnapshotVersion = .zero
        byteSize = 0
    }

    private mutating func release(holderOf path: ResourcePath) {
        if let count = holders[path], count > 1 { holders[path] = count - 1 } else { holders[path] = nil }
    }

    /// Restores persisted targets and document numbers; the counter continues after the largest.
    public mutating func restore(targets restored: [String: Target], documentSequence restoredDocs: [ResourcePath: Int64]) {
        removeAll()
        targets = restored
        documentSequence = restoredDocs
        highestTargetID = restored.values.map(\.targetID).max() ?? 0
        lastRemoteSnapshotVersion = restored.values.map(\.snapshotVersion).max() ?? .zero
        // Targets saved before target ids were kept get new ones.
        for (queryID, target) in restored.sorted(by: { $0.key < $1.key }) where target.targetID == 0 {
            highestTargetID += 2
            targets[queryID]?.targetID = highestTargetID
        }
        for (queryID, target) in targets { queryIDs[target.targetID] = queryID }
        for (queryID, target) in restored {
            byteSize += TargetCache.size(of: queryID)
            for path in target.documents {
                holders[path, default: 0] += 1
                byteSize += DocumentLimits.nameSize(path)
            }
        }
        current = max(restored.values.map(\.sequenceNumber).max() ?? 0, restoredDocs.values.max() ?? 0)
    }
}
