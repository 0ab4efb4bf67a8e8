import FiregateModel

/// One change in a view snapshot. `metadata` changes (only the document's pending flag
/// flipped) surface as `modified` in the public API.
public struct ViewDocumentChange: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case added, removed, modified, metadata

        /// `added`, `removed` or `modified`, as listener events and the timeline name it.
        public var name: String { self == .added ? "added" : self == .removed ? "removed" : "modified" }
    }

    public var kind: Kind
    public var document: LocalDocument
    public var oldIndex: Int
    public var newIndex: Int
}

/// A listener's snapshot: the documents, what changed, and the metadata.
public struct ViewSnapshot: Sendable {
    public var documents: [LocalDocument]
    public var changes: [ViewDocumentChange]
    /// Documents counted as having pending writes in this view.
    public var mutatedPaths: Set<ResourcePath>
    public var fromCache: Bool
    public var syncStateChanged: Bool
    public var hasCachedResults: Bool

    public var hasPendingWrites: Bool { !mutatedPaths.isEmpty }

    /// The first snapshot a listener sees: every document added.
    public func asInitial() -> ViewSnapshot {
        var copy = self
        copy.changes = documents.enumerated().map { ViewDocumentChange(kind: .added, document: $1, oldIndex: -1, newIndex: $0) }
        return copy
    }
}
