import FiregateModel

/// The entries of one index over the cached documents, kept in index order: by array element
/// (for a CONTAINS segment), then each directional segment's value in its direction, then the
/// document name in the direction of the last one (the SDK's entry key, compared by value
/// rather than by its byte encoding).
///
/// A document lacking a directional field has no entry; with a CONTAINS segment it has one
/// entry per distinct element of that array field. Changes are collected and applied to the
/// sorted list at the next lookup: a few in place (binary search), a burst in one merge.
struct IndexEntries: Sendable {
    struct Entry: Sendable {
        var element: Value?
        var values: [Value]
        var path: ResourcePath
    }

    let index: FieldIndex
    private let directional: [FieldIndex.Segment]
    private let nameDescending: Bool
    private var byPath: [ResourcePath: [Entry]] = [:]
    private(set) var sorted: [Entry] = []
    private var touched: Set<ResourcePath> = []
    /// Entries leaving the sorted list at the next compaction (the old entries of touched paths).
    private var leaving: [Entry] = []
    /// Up to this many changes are applied in place; more are merged.
    static let inPlaceLimit = 64

    init(index: FieldIndex) {
        self.index = index
        directional = index.directionalSegments
        nameDescending = directional.last?.kind == .descending
    }

    private(set) var entryCount = 0

    /// Re-indexes one document (nil: it is gone from the cache).
    mutating func update(_ path: ResourcePath, _ document: Document?, database: DatabaseID) {
        let entries = document.map { entriesFor($0, database: database) } ?? []
        let had = byPath[path]?.count ?? 0
        // The sorted list still holds the entries of the last compaction, not of later updates.
        if !touched.contains(path) { leaving += byPath[path] ?? [] }
        if entries.isEmpty { byPath[path] = nil } else { byPath[path] = entries }
        entryCount += entries.count - had
        if had > 0 || !entries.isEmpty { touched.insert(path) }
    }

    func entriesFor(_ document: Document, database: DatabaseID) -> [Entry] {
        var values: [Value] = []
        for segment in directional {
            guard let value = document.value(at: segment.field, database: database) else { return [] }
            values.append(value)
        }
        guard let arraySegment = index.arraySegment else { return [Entry(element: nil, values: values, path: document.path)] }
        guard let elements = document.value(at: arraySegment.field, database: database)?.arrayElements else { return [] }
        var distinct: [Value] = []
        for element in elements where !distinct.contains(where: { Value.compare($0, element) == 0 }) { distinct.append(element) }
        return distinct.map { Entry(element: $0, values: values, path: document.path) }
    }

    /// Merges pending changes into the sorted list.
    mutating func compact() {
        guard !touched.isEmpty else { return }
        var fresh: [Entry] = []
        for path in touched { fresh += byPath[path] ?? [] }
        defer {
            touched.removeAll()
            leaving.removeAll()
        }
        if leaving.count + fresh.count <= IndexEntries.inPlaceLimit {
            for entry in leaving {
                let i = sorted.partitionIndex { compare($0, entry) < 0 }
                if i < sorted.count, sorted[i].path == entry.path, compare(sorted[i], entry) == 0 { sorted.remove(at: i) }
            }
            for entry in fresh { sorted.insert(entry, at: sorted.partitionIndex { compare($0, entry) < 0 }) }
            return
        }
        fresh.sort { compare($0, $1) < 0 }
        let kept = sorted.filter { !touched.contains($0.path) }
        var merged: [Entry] = []
        merged.reserveCapacity(kept.count + fresh.count)
        var i = 0, j = 0
        while i < kept.count || j < fresh.count {
            if j == fresh.count || (i < kept.count && compare(kept[i], fresh[j]) <= 0) {
                merged.append(kept[i])
                i += 1
            } else {
                merged.append(fresh[j])
                j += 1
            }
        }
        sorted = merged
    }

    /// Index order of two entries.
    func compare(_ a: Entry, _ b: Entry) -> Int {
        if let x = a.element, let y = b.element {
            let c = Value.compare(x, y)
            if c != 0 { return c }
        }
        let c = compare(a.values, to: b.values)
        if c != 0 { return c }
        let n = ResourcePath.compare(a.path, b.path)
        return nameDescending ? -n : n
    }

    /// Compares the first `prefix.count` directional values of `values` with `prefix`, each in
    /// its segment's direction.
    func compare(_ values: [Value], to prefix: [Value]) -> Int {
        for (k, value) in prefix.enumerated() {
            let c = Value.compare(values[k], value)
            if c != 0 { return directional[k].kind == .descending ? -c : c }
        }
        return 0
    }

    /// The first position in `range` where `isAfter` becomes true (it must be monotone there).
    func partition(_ range: Range<Int>, _ isAfter: (Entry) -> Bool) -> Int {
        var low = range.lowerBound, high = range.upperBound
        while low < high {
            let mid = (low + high) / 2
            if isAfter(sorted[mid]) { high = mid } else { low = mid + 1 }
        }
        return low
    }
}
