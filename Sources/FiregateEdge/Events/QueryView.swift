import FiregateModel

/// The view of one listener's query: the documents last shown and which of them count as
/// pending, turning each new local result into a snapshot by the SDK's rules (core/view.ts):
/// data changes are `modified`, a flip of only the pending flag is `metadata`, an acknowledged
/// write awaiting the watch keeps showing the local version, and the view is `fromCache`
/// until its target is current.
public struct QueryView: Sendable {
    public let query: Query
    public let database: DatabaseID
    public private(set) var documents: [LocalDocument] = []
    public private(set) var mutatedPaths: Set<ResourcePath> = []
    /// Whether the view was last synced with its target; nil before the first update, so the
    /// first update always yields a snapshot (as the SDK's view starts with no sync state).
    public private(set) var current: Bool?
    /// Documents shown that the target's server result does not hold (limbo), as of the last
    /// update that knew the target's keys while current.
    public private(set) var limboDocuments: Set<ResourcePath> = []
    /// `documents` by path, so a change finds what the view shows without a search.
    private var shown: [ResourcePath: LocalDocument] = [:]

    /// Whether `apply(changed:…)` can update this view: without a limit or offset, a change
    /// can never pull a document the view does not know into it.
    public var updatesIncrementally: Bool { query.limit == nil && query.offset == 0 }

    public init(query: Query, database: DatabaseID) {
        self.query = query
        self.database = database
    }

    /// Applies a new local query result and the target's sync state; nil when nothing changed.
    /// With `syncedKeys` (the target's server result) a current view also finds its limbo
    /// documents, and is synced only without them; `pendingReset` (the target is being listened
    /// to again after an existence-filter mismatch) keeps it from cache (View.applyChanges).
    /// Without `syncedKeys` (the live watch, which follows the backend's whole result), only
    /// the `unresolved` documents — a bundle's, not yet asked of the server — can be in limbo.
    public mutating func update(result: [LocalDocument], current targetCurrent: Bool, hasCachedResults: Bool,
                                syncedKeys: Set<ResourcePath>? = nil, unresolved: Set<ResourcePath> = [],
                                pendingReset: Bool = false) -> ViewSnapshot? {
        let old = shown
        var incoming: [ResourcePath: LocalDocument] = [:]
        for doc in result { incoming[doc.path] = doc }

        var next = old
        var nextMutated = mutatedPaths
        var changes: [(ViewDocumentChange.Kind, LocalDocument, LocalDocument?)] = []
        for path in Set(old.keys).union(incoming.keys) {
            let oldDoc = old[path], newDoc = incoming[path]
            let newPending = newDoc.map { $0.hasLocalMutations || (mutatedPaths.contains(path) && $0.hasCommittedMutations) } ?? false
            if let oldDoc, let newDoc {
                let oldPending = mutatedPaths.contains(path)
                if oldDoc.document.fields != newDoc.document.fields {
                    // An acknowledged write whose watch confirmation is still outstanding keeps
                    // the local version on screen (View.shouldWaitForSyncedDocument).
                    if oldDoc.hasLocalMutations && newDoc.hasCommittedMutations && !newDoc.hasLocalMutations { continue }
                    changes.append((.modified, newDoc, oldDoc))
                } else if oldPending != newPending {
                    changes.append((.metadata, newDoc, oldDoc))
                } else {
                    // Nothing to show: the view keeps its copy, pending flag included
                    // (View.computeDocChanges applies no change).
                    continue
                }
                next[path] = newDoc
                if newPending { nextMutated.insert(path) } else { nextMutated.remove(path) }
            } else if let newDoc {
                changes.append((.added, newDoc, nil))
                next[path] = newDoc
                if newPending { nextMutated.insert(path) } else { nextMutated.remove(path) }
            } else if let oldDoc {
                changes.append((.removed, oldDoc, oldDoc))
                next[path] = nil
                nextMutated.remove(path)
            }
        }
        // Keep only what the query's window admits (held-back documents may shift it).
        let ordered = query.run(over: next.values.map(\.document), database: database, locally: true).documents
        let kept = Set(ordered.map(\.path))
        let nextDocuments = ordered.map { next[$0.path]! }
        nextMutated = nextMutated.intersection(kept)
        changes = changes.filter { kind, doc, _ in kind == .removed ? !kept.contains(doc.path) : kept.contains(doc.path) }
        for path in old.keys where !kept.contains(path) && !changes.contains(where: { $0.1.path == path }) {
            changes.append((.removed, old[path]!, old[path]))
        }

        if let syncedKeys, targetCurrent, !pendingReset {
            limboDocuments = Set(nextDocuments.lazy.filter { !syncedKeys.contains($0.path) && !$0.hasLocalMutations }.map(\.path))
        } else if syncedKeys == nil {
            limboDocuments = unresolved.isEmpty ? [] : Set(nextDocuments.lazy.filter { unresolved.contains($0.path) && !$0.hasLocalMutations }.map(\.path))
        }
        let newCurrent = targetCurrent && !pendingReset && limboDocuments.isEmpty
        let syncStateChanged = current != newCurrent
        shown = [:]
        shown.reserveCapacity(nextDocuments.count)
        for doc in nextDocuments { shown[doc.path] = doc }
        guard !changes.isEmpty || syncStateChanged else {
            documents = nextDocuments
            mutatedPaths = nextMutated
            return nil
        }
        let viewChanges = indexChanges(changes, from: documents)
        documents = nextDocuments
        mutatedPaths = nextMutated
        current = newCurrent
        return ViewSnapshot(documents: documents, changes: viewChanges, mutatedPaths: mutatedPaths, fromCache: !newCurrent,
                            syncStateChanged: syncStateChanged, hasCachedResults: hasCachedResults)
    }

    /// Applies new local versions of the documents in `changed` (nil: gone locally) while every
    /// other document stays as last shown — the SDK's View.computeDocChanges over the changed
    /// documents only, so the cost follows the change, not the size of the result. Only when
    /// `updatesIncrementally`, and only on a view that has had its first update (the caller
    /// falls back to `update(result:…)` otherwise); the snapshot is the one that would give.
    public mutating func apply(changed: [(ResourcePath, LocalDocument?)], current targetCurrent: Bool, hasCachedResults: Bool) -> ViewSnapshot? {
        precondition(updatesIncrementally && current != nil, "an incremental update needs an unwindowed view that has been updated once")
        let query = self.query, database = self.database
        var steps: [(step: DocumentChangeSet.ChangeStep, kind: ViewDocumentChange.Kind, doc: LocalDocument, old: LocalDocument?)] = []
        var nextMutated = mutatedPaths
        for (path, candidate) in changed {
            let newDoc = candidate.flatMap { doc in
                query.matches(doc.document, database: database, locally: true) && query.withinBounds(doc.document, database: database) ? doc : nil
            }
            let oldDoc = shown[path]
            let newPending = newDoc.map { $0.hasLocalMutations || (mutatedPaths.contains(path) && $0.hasCommittedMutations) } ?? false
            if let oldDoc, let newDoc {
                if oldDoc.document.fields != newDoc.document.fields {
                    // As in update(result:…): an acknowledged write awaiting the watch stays shown.
                    if oldDoc.hasLocalMutations && newDoc.hasCommittedMutations && !newDoc.hasLocalMutations { continue }
                    steps.append((.move, .modified, newDoc, oldDoc))
                } else if mutatedPaths.contains(path) != newPending {
                    steps.append((.move, .metadata, newDoc, oldDoc))
                } else {
                    continue
                }
            } else if let newDoc {
                steps.append((.insertion, .added, newDoc, nil))
            } else if let oldDoc {
                steps.append((.removal, .removed, oldDoc, oldDoc))
                nextMutated.remove(path)
                continue
            } else {
                continue
            }
            if newPending { nextMutated.insert(path) } else { nextMutated.remove(path) }
        }
        let syncStateChanged = current != targetCurrent
        guard !steps.isEmpty || syncStateChanged else { return nil }
        // DocumentChangeSet.indexed's order and running list, with `documents` as the list.
        let before = { (a: LocalDocument, b: LocalDocument) in query.compare(a.document, b.document, database: database) < 0 }
        steps.sort { a, b in a.step != b.step ? a.step.rawValue < b.step.rawValue : before(a.doc, b.doc) }
        var viewChanges: [ViewDocumentChange] = []
        viewChanges.reserveCapacity(steps.count)
        for (step, kind, doc, old) in steps {
            var oldIndex = -1, newIndex = -1
            if let old {
                oldIndex = position(of: old, before: before)
            }
            switch step {
            case .move:
                newIndex = replace(at: oldIndex, with: doc, before: before)
                shown[doc.path] = doc
            case .removal:
                documents.remove(at: oldIndex)
                shown[doc.path] = nil
            case .insertion:
                newIndex = documents.partitionIndex { before($0, doc) }
                documents.insert(doc, at: newIndex)
                shown[doc.path] = doc
            }
            viewChanges.append(ViewDocumentChange(kind: kind, document: doc, oldIndex: oldIndex, newIndex: newIndex))
        }
        mutatedPaths = nextMutated
        current = targetCurrent
        return ViewSnapshot(documents: documents, changes: viewChanges, mutatedPaths: mutatedPaths, fromCache: !targetCurrent,
                            syncStateChanged: syncStateChanged, hasCachedResults: hasCachedResults)
    }

    /// Puts `doc` where the document at `index` was, then where the order wants it: only the
    /// documents between the two places shift, so a change that keeps its place (the usual
    /// edit) moves nothing, instead of a removal and an insertion each moving the whole tail.
    /// Returns its new index, as a removal followed by an insertion would give.
    private mutating func replace(at index: Int, with doc: LocalDocument, before: (LocalDocument, LocalDocument) -> Bool) -> Int {
        var target = index
        if index + 1 < documents.count, before(documents[index + 1], doc) {
            target = documents.partitionIndex(in: index + 1..<documents.count) { before($0, doc) } - 1
            for i in index..<target { documents[i] = documents[i + 1] }
        } else if index > 0, before(doc, documents[index - 1]) {
            target = documents.partitionIndex(in: 0..<index) { before($0, doc) }
            for i in stride(from: index, to: target, by: -1) { documents[i] = documents[i - 1] }
        }
        documents[target] = doc
        return target
    }

    /// Where a shown document sits: found by the query's order (every order ends with the
    /// name, so it is unique), by its path should the order not find it.
    private func position(of doc: LocalDocument, before: (LocalDocument, LocalDocument) -> Bool) -> Int {
        let i = documents.partitionIndex { before($0, doc) }
        if i < documents.count && documents[i].path == doc.path { return i }
        return documents.firstIndex { $0.path == doc.path }!
    }

    /// Gives each change its indexes as `docChanges()` does (DocumentChangeSet.indexed).
    func indexChanges(_ changes: [(ViewDocumentChange.Kind, LocalDocument, LocalDocument?)], from oldDocuments: [LocalDocument]) -> [ViewDocumentChange] {
        let steps = changes.map { kind, doc, _ -> (DocumentChangeSet.ChangeStep, Document, (ViewDocumentChange.Kind, LocalDocument)) in
            let step: DocumentChangeSet.ChangeStep = switch kind {
            case .removed: .removal
            case .added: .insertion
            case .modified, .metadata: .move
            }
            return (step, doc.document, (kind, doc))
        }
        return DocumentChangeSet.indexed(steps, from: oldDocuments.map(\.document), query: query, database: database).map {
            ViewDocumentChange(kind: $0.payload.0, document: $0.payload.1, oldIndex: $0.oldIndex, newIndex: $0.newIndex)
        }
    }
}

extension LocalDocument {
    var path: ResourcePath { document.path }
}
