/// The sorted set of documents matching a query (filter and cursors, before offset/limit),
/// kept up to date change by change so a listener never rescans the collection.
public struct QueryMatches: Sendable {
    public let query: Query
    public let database: DatabaseID
    public private(set) var sorted: [Document]

    public init(query: Query, database: DatabaseID, candidates: some Sequence<Document>) {
        self.query = query
        self.database = database
        sorted = query.matchingSorted(candidates, database: database)
    }

    /// Applies one document change; returns whether the match set changed.
    @discardableResult
    public mutating func apply(path: ResourcePath, before: Document?, after: Document?) -> Bool {
        guard query.containsPath(path) else { return false }
        var changed = false
        if let before, query.matches(before, database: database), query.withinBounds(before, database: database),
           let i = index(of: before) {
            sorted.remove(at: i)
            changed = true
        }
        if let after, query.matches(after, database: database), query.withinBounds(after, database: database) {
            let i = sorted.partitionIndex { query.compare($0, after, database: database) < 0 }
            sorted.insert(after, at: i)
            changed = true
        }
        return changed
    }

    func index(of document: Document) -> Int? {
        let i = sorted.partitionIndex { query.compare($0, document, database: database) < 0 }
        if i < sorted.count, sorted[i].path == document.path { return i }
        // The stored version may order differently from `document`: fall back to a scan.
        return sorted.firstIndex { $0.path == document.path }
    }

    /// The result: offset and limit applied.
    public var window: [Document] { query.window(sorted).documents }
}
