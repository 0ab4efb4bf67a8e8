import FiregateModel

/// Why a target is listened to (the SDK's TargetPurpose): a query's own listen, its re-listen
/// after an existence-filter mismatch (with or without a bloom filter that failed), or a limbo
/// document's lookup.
public enum TargetPurpose: String, Sendable {
    case listen = "TargetPurposeListen"
    case existenceFilterMismatch = "TargetPurposeExistenceFilterMismatch"
    case existenceFilterMismatchBloom = "TargetPurposeExistenceFilterMismatchBloom"
    case limboResolution = "TargetPurposeLimboResolution"
}

/// What the remote side knows of one listened target (the SDK's TargetData).
public struct WatchTarget: Sendable, Equatable {
    public var id: Int
    public var query: Query
    public var purpose: TargetPurpose
    /// Opaque token of the last consistent snapshot that included this target ("" none).
    public var resumeToken: String = ""
    public var snapshotVersion: Timestamp = .zero
    /// For a document target: the one document it looks up.
    public var lookupPath: ResourcePath?
}

/// One target's part of a consistent snapshot (the SDK's TargetChange).
public struct TargetChange: Sendable, Equatable {
    public var resumeToken: String
    public var current: Bool
    public var added: Set<ResourcePath> = []
    public var modified: Set<ResourcePath> = []
    public var removed: Set<ResourcePath> = []
}

/// A consistent snapshot from watch (the SDK's RemoteEvent): what changed for each target,
/// the documents to take into the cache, targets to listen to again from scratch, and the
/// documents only limbo lookups mentioned.
public struct RemoteEvent: Sendable {
    public var snapshotVersion: Timestamp
    public var targetChanges: [Int: TargetChange]
    public var targetMismatches: [Int: TargetPurpose]
    /// Found documents, or known missing ones at their version (`.zero`: access was lost).
    public var documentUpdates: [ResourcePath: RemoteDocument]
    public var resolvedLimboDocuments: Set<ResourcePath>
}
