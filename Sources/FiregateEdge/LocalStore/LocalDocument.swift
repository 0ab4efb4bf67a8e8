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

extension Query {
    /// Matches a whole collection (no filter, window or cursor; ordered by name at most): the
    /// SDK never uses an index for it.
    var readsWholeCollection: Bool {
        filter == nil && limit == nil && startAt == nil && endAt == nil && explicitOrderBy.allSatisfy(\.field.isDocumentID)
    }
}
