import FiregateModel

/// A document as the app sees it through the client: the remote version with pending local
/// mutations applied (latency compensation), with the SDK's two pending flags.
public struct LocalDocument: Sendable, Equatable {
    public var document: Document
    /// A queued, unacknowledged write touches it.
    public var hasLocalMutations: Bool
    /// It reflects an acknowledged write the watch has not confirmed yet.
    public var hasCommittedMutations: Bool
}

/// Computes local views from the remote cache and the mutation queue.
public struct LocalViewBuilder {
    public let database: DatabaseID
    public let remote: RemoteDocumentCache
    public let queue: MutationQueue

    public init(database: DatabaseID, remote: RemoteDocumentCache, queue: MutationQueue) {
        self.database = database
        self.remote = remote
        self.queue = queue
    }

    /// The local view of one document; nil if it does not exist locally. Mutations whose
    /// precondition fails locally are skipped, as the SDK does.
    public func document(_ path: ResourcePath) -> LocalDocument? {
        let base = remote[path]
        var current = base?.document
        var mutated = false
        for batch in queue.batches {
            for write in batch.writes where write.path == path {
                let time = batch.localWriteTime
                guard let outcome = try? write.apply(to: current, commitTime: time, database: database, serverTime: { previous in
                    .serverTimestamp(localWriteTime: time, previous: previous.flatMap(LocalViewBuilder.unwrapPending))
                }) else { continue }
                current = outcome.document.map { doc in
                    var doc = doc
                    // Pending writes keep the last server version's times.
                    doc.updateTime = base?.document?.updateTime ?? time
                    doc.createTime = base?.document?.createTime ?? time
                    return doc
                }
                mutated = true
            }
        }
        guard let current else { return nil }
        var committed = false
        if case .found(_, let flag)? = base { committed = flag }
        return LocalDocument(document: current, hasLocalMutations: mutated, hasCommittedMutations: committed && !mutated)
    }

    /// A pending server timestamp's "previous value" is the last real value.
    static func unwrapPending(_ value: Value) -> Value? {
        if case .serverTimestamp(_, let previous) = value { return previous }
        return value
    }

    /// Whether the cache knows the document (found, missing, or created locally).
    public func isKnown(_ path: ResourcePath) -> Bool {
        remote[path] != nil || queue.mutatedPaths.contains(path)
    }

    /// Runs a query over every locally known document.
    public func run(_ query: Query) -> [LocalDocument] {
        var paths = Set(remote.paths(for: query))
        for batch in queue.batches {
            for write in batch.writes where query.containsPath(write.path) { paths.insert(write.path) }
        }
        var byPath: [ResourcePath: LocalDocument] = [:]
        for path in paths {
            if let doc = document(path) { byPath[path] = doc }
        }
        let result = query.run(over: byPath.values.map(\.document), database: database).documents
        return result.map { byPath[$0.path]! }
    }
}
