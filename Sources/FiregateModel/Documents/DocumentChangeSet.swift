/// How a query result changed between two snapshots, as the SDK's `docChanges()` reports it.
public struct ViewChange: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case added, modified, removed
    }

    public var kind: Kind
    public var document: Document
    /// Position in the previous result (-1 for added).
    public var oldIndex: Int
    /// Position in the new result (-1 for removed).
    public var newIndex: Int

    public init(kind: Kind, document: Document, oldIndex: Int, newIndex: Int) {
        self.kind = kind
        self.document = document
        self.oldIndex = oldIndex
        self.newIndex = newIndex
    }
}

/// Computes `ViewChange`s between two sorted results of the same query.
///
/// Changes come removed first, then added, then modified, each group in query order; indexes
/// are computed against a running list that starts as the old result and has each change
/// applied in turn — the SDK's `docChanges()` contract.
public enum DocumentChangeSet {
    public static func changes(from old: [Document], to new: [Document], query: Query, database: DatabaseID,
                               isModified: (Document, Document) -> Bool = { $0 != $1 }) -> [ViewChange] {
        var oldByPath: [ResourcePath: Document] = [:]
        for doc in old { oldByPath[doc.path] = doc }
        var newByPath: [ResourcePath: Document] = [:]
        for doc in new { newByPath[doc.path] = doc }
        var removed: [Document] = [], added: [Document] = [], modified: [Document] = []
        for doc in old where newByPath[doc.path] == nil { removed.append(doc) }
        for doc in new {
            if let previous = oldByPath[doc.path] {
                if isModified(previous, doc) { modified.append(doc) }
            } else {
                added.append(doc)
            }
        }
        if old.isEmpty {
            return new.enumerated().map { ViewChange(kind: .added, document: $1, oldIndex: -1, newIndex: $0) }
        }
        let changes = removed.map { (ChangeStep.removal, $0, ViewChange.Kind.removed) }
            + added.map { (ChangeStep.insertion, $0, ViewChange.Kind.added) }
            + modified.map { (ChangeStep.move, $0, ViewChange.Kind.modified) }
        return indexed(changes, from: old, query: query, database: database).map {
            ViewChange(kind: $0.payload, document: $0.document, oldIndex: $0.oldIndex, newIndex: $0.newIndex)
        }
    }

    /// What a change does to the running list: leave it, enter it, or leave and re-enter it.
    public enum ChangeStep: Int, Sendable {
        case removal = 0, insertion = 1, move = 2
    }

    /// Orders changes (removals, then insertions, then moves, each group in query order) and gives
    /// each its indexes against a running list that starts as `old` and has each change applied
    /// in turn. Shared by backend listens and edge views; `payload` carries the caller's kind.
    public static func indexed<Payload>(_ changes: [(ChangeStep, Document, Payload)], from old: [Document], query: Query,
                                        database: DatabaseID) -> [(payload: Payload, document: Document, oldIndex: Int, newIndex: Int)] {
        let compare = { (a: Document, b: Document) in query.compare(a, b, database: database) < 0 }
        let ordered = changes.sorted { a, b in a.0 != b.0 ? a.0.rawValue < b.0.rawValue : compare(a.1, b.1) }
        var tracker = old
        return ordered.map { step, doc, payload in
            var oldIndex = -1, newIndex = -1
            if step != .insertion, let i = tracker.firstIndex(where: { $0.path == doc.path }) {
                oldIndex = i
                tracker.remove(at: i)
            }
            if step != .removal {
                let i = tracker.partitionIndex { compare($0, doc) }
                tracker.insert(doc, at: i)
                newIndex = i
            }
            return (payload, doc, oldIndex, newIndex)
        }
    }
}

extension Array {
    /// The first index in `range` (the whole array when nil) whose element is not `isBefore`
    /// (binary search on a partitioned array).
    public func partitionIndex(in range: Range<Int>? = nil, where isBefore: (Element) -> Bool) -> Int {
        var low = range?.lowerBound ?? 0, high = range?.upperBound ?? count
        while low < high {
            let mid = (low + high) / 2
            if isBefore(self[mid]) { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
