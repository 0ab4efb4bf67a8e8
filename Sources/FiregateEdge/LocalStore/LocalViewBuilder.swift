import FiregateModel

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
        execute(query, useIndexes: false).documents
    }

    /// Runs a query over the cache, through an index when one serves it (and `useIndexes`),
    /// else by scanning the collection. Both give the same documents; the plan and the
    /// documents read say what it cost.
    public func execute(_ query: Query, useIndexes: Bool) -> QueryExecution {
        var mutated = Set<ResourcePath>()
        for batch in queue.batches {
            for write in batch.writes where query.containsPath(write.path) { mutated.insert(write.path) }
        }
        var byPath: [ResourcePath: LocalDocument] = [:]
        var plan = QueryExecution.Plan.scan
        var read = 0
        if useIndexes, !query.readsWholeCollection, let (index, match) = remote.indexes.choose(for: query) {
            plan = .index
            // Index order is the query's order: each range's first results are enough.
            let perRange = match.ordered && !query.limitToLast ? query.limit.map { $0 + query.offset } : nil
            let lookup = remote.indexes.lookup(index, match, perRange: perRange, excluded: mutated) { path in
                guard let doc = document(path), query.matches(doc.document, database: database, locally: true),
                      query.withinBounds(doc.document, database: database) else { return false }
                byPath[path] = doc
                return true
            }
            read = lookup.read
        } else {
            for path in remote.paths(for: query) where !mutated.contains(path) {
                read += 1
                if let doc = document(path) { byPath[path] = doc }
            }
        }
        // Documents with pending writes are read through the local view, whatever the plan.
        for path in mutated {
            read += 1
            if let doc = document(path) { byPath[path] = doc }
        }
        let result = query.run(over: byPath.values.map(\.document), database: database, locally: true).documents
        return QueryExecution(documents: result.map { byPath[$0.path]! }, plan: plan, documentsRead: read)
    }
}
