import FiregateModel

/// The persistent cache's index manager (the SDK's IndexManager with its TargetIndexMatcher):
/// the configured and auto-created field indexes, their entries over the remote document
/// cache, and the choice of an index for a query.
///
/// Entries index the documents as the server last sent them; documents with pending writes are
/// read through the local view by the query engine instead, so a lookup never misses a local
/// change. Entries follow every cache change (the SDK's backfiller catches up periodically; here
/// there is nothing to catch up).
public struct LocalIndexes: Sendable {
    public private(set) var indexes: [FieldIndex] = []
    /// Indexes the query engine created itself (auto creation).
    public private(set) var autoCreated: Set<FieldIndex> = []
    private var entries: [FieldIndex: IndexEntries] = [:]
    /// The database whose documents are indexed (field values of `__name__` are references into it).
    private var database = DatabaseID(project: "")
    public var isEmpty: Bool { indexes.isEmpty }

    public init() {}

    public var entryCount: Int { entries.values.reduce(0) { $0 + $1.entryCount } }

    /// Replaces the configuration: unchanged indexes keep their entries, others are built from
    /// `documents`; removed ones go, auto-created ones included (setIndexConfiguration).
    public mutating func configure(_ configured: [FieldIndex], documents: [ResourcePath: RemoteDocument], database: DatabaseID) {
        self.database = database
        var unique: [FieldIndex] = []
        for index in configured where !unique.contains(index) { unique.append(index) }
        indexes = unique
        autoCreated.removeAll()
        let kept = entries
        entries = [:]
        for index in unique { entries[index] = kept[index] ?? LocalIndexes.build(index, documents: documents, database: database) }
    }

    /// Adds an index the query engine decided to create.
    public mutating func addAutoCreated(_ index: FieldIndex, documents: [ResourcePath: RemoteDocument], database: DatabaseID) {
        guard !indexes.contains(index) else { return }
        self.database = database
        indexes.append(index)
        autoCreated.insert(index)
        entries[index] = LocalIndexes.build(index, documents: documents, database: database)
    }

    public mutating func removeAll() {
        indexes.removeAll()
        autoCreated.removeAll()
        entries.removeAll()
    }

    static func build(_ index: FieldIndex, documents: [ResourcePath: RemoteDocument], database: DatabaseID) -> IndexEntries {
        var built = IndexEntries(index: index)
        for (path, entry) in documents where path.parent.lastSegment == index.collectionGroup {
            built.update(path, entry.document, database: database)
        }
        built.compact()
        return built
    }

    /// Marks `index` as created by the query engine (restoring a saved configuration).
    mutating func markAutoCreated(_ index: FieldIndex) {
        if indexes.contains(index) { autoCreated.insert(index) }
    }

    /// Empties every index (the cache was cleared); the definitions stay.
    mutating func clearEntries() {
        for index in indexes { entries[index] = IndexEntries(index: index) }
    }

    /// Keeps the entries of a changed cached document current.
    mutating func documentChanged(_ path: ResourcePath, _ document: Document?) {
        let group = path.parent.lastSegment
        for index in indexes where index.collectionGroup == group {
            entries[index]?.update(path, document, database: database)
        }
    }

    /// Merges pending entry changes (before lookups).
    mutating func compact() {
        for index in indexes { entries[index]?.compact() }
    }

    /// The index serving `query`, the one with the most segments (nil: a scan is needed).
    func choose(for query: Query) -> (FieldIndex, IndexMatch)? {
        guard let target = IndexTarget(query) else { return nil }
        var best: (FieldIndex, IndexMatch)?
        for index in indexes where index.collectionGroup == query.collectionID {
            guard let match = target.match(index) else { continue }
            if best == nil || index.segments.count > best!.0.segments.count { best = (index, match) }
        }
        return best
    }

    /// Reads candidates of `query` through `index` in index order, skipping `excluded` paths.
    /// `accept` says whether a candidate is in the result; with `perRange` set, each range stops
    /// after that many accepted. Returns the accepted paths and how many candidates were read.
    func lookup(_ index: FieldIndex, _ match: IndexMatch, perRange: Int?, excluded: Set<ResourcePath>,
                accept: (ResourcePath) -> Bool) -> (paths: [ResourcePath], read: Int) {
        guard let entries = entries[index] else { return ([], 0) }
        var accepted: [ResourcePath] = []
        var seen = Set<ResourcePath>()
        var read = 0
        let all = 0..<entries.sorted.count
        for element in match.elements {
            for prefix in match.prefixes {
                var range = entries.partition(all) { entry in
                    (element.map { Value.compare(entry.element!, $0) } ?? 0).nonZero(or: entries.compare(entry.values, to: prefix)) >= 0
                }..<entries.partition(all) { entry in
                    (element.map { Value.compare(entry.element!, $0) } ?? 0).nonZero(or: entries.compare(entry.values, to: prefix)) > 0
                }
                if let bounds = match.range { range = narrow(range, entries: entries, position: prefix.count, bounds: bounds) }
                var count = 0
                for i in range {
                    let path = entries.sorted[i].path
                    guard !excluded.contains(path), seen.insert(path).inserted else { continue }
                    read += 1
                    if accept(path) {
                        accepted.append(path)
                        count += 1
                        if let perRange, count >= perRange { break }
                    }
                }
            }
        }
        return (accepted, read)
    }

    /// Within a prefix range, the entries whose value at `position` lies within `bounds`.
    private func narrow(_ range: Range<Int>, entries: IndexEntries, position: Int, bounds: IndexMatch.Bounds) -> Range<Int> {
        let descending = entries.index.directionalSegments[position].kind == .descending
        func value(_ entry: IndexEntries.Entry) -> Value { entry.values[position] }
        // In index order: ascending runs from low to high values, descending the other way.
        var start = range.lowerBound, end = range.upperBound
        if descending {
            if let (upper, inclusive) = bounds.upper {
                start = entries.partition(range) { inclusive ? Value.compare(value($0), upper) <= 0 : Value.compare(value($0), upper) < 0 }
            }
            if let (lower, inclusive) = bounds.lower {
                end = entries.partition(start..<range.upperBound) { inclusive ? Value.compare(value($0), lower) < 0 : Value.compare(value($0), lower) <= 0 }
            }
        } else {
            if let (lower, inclusive) = bounds.lower {
                start = entries.partition(range) { inclusive ? Value.compare(value($0), lower) >= 0 : Value.compare(value($0), lower) > 0 }
            }
            if let (upper, inclusive) = bounds.upper {
                end = entries.partition(start..<range.upperBound) { inclusive ? Value.compare(value($0), upper) > 0 : Value.compare(value($0), upper) >= 0 }
            }
        }
        return start..<max(start, end)
    }
}

private extension Int {
    func nonZero(or next: @autoclosure () -> Int) -> Int { self != 0 ? self : next() }
}
