import FiregateModel

/// What the client last heard from the server about one document.
public enum RemoteDocument: Sendable, Equatable {
    /// The document as the server has it. `committed` marks a version the client derived from
    /// its own acknowledged write that the watch has not confirmed yet (hasCommittedMutations).
    case found(Document, committed: Bool)
    /// Known not to exist (at `version`); `committed`: as the client's own acknowledged write
    /// left it (a delete, or a patch of a document it did not have), not confirmed by watch yet.
    case missing(version: Timestamp, committed: Bool = false)

    public var document: Document? {
        if case .found(let doc, _) = self { return doc }
        return nil
    }

    /// The server version: the update time, or the time the absence was observed.
    public var version: Timestamp {
        switch self {
        case .found(let doc, _): doc.updateTime
        case .missing(let version, _): version
        }
    }
}

/// The remote document cache: the server's documents as last seen, with known-missing ones,
/// indexed by collection so local queries do not scan the whole cache.
public struct RemoteDocumentCache: Sendable {
    public private(set) var entries: [ResourcePath: RemoteDocument] = [:]
    /// Local query indexes over these documents, kept current by `set`.
    public internal(set) var indexes = LocalIndexes()
    private var byCollection: [ResourcePath: Set<ResourcePath>] = [:]

    public init() {}

    public subscript(path: ResourcePath) -> RemoteDocument? { entries[path] }

    public mutating func set(_ path: ResourcePath, _ entry: RemoteDocument?) {
        if !indexes.isEmpty { indexes.documentChanged(path, entry?.document) }
        if let entry {
            if let old = entries.updateValue(entry, forKey: path) {
                byteSize -= RemoteDocumentCache.size(path, old)
            } else {
                byCollection[path.parent, default: []].insert(path)
            }
            byteSize += RemoteDocumentCache.size(path, entry)
        } else if let old = entries.removeValue(forKey: path) {
            byteSize -= RemoteDocumentCache.size(path, old)
            byCollection[path.parent]?.remove(path)
            if byCollection[path.parent]?.isEmpty == true { byCollection[path.parent] = nil }
        }
    }

    /// Paths cached in collections a query can read.
    public func paths(for query: Query) -> [ResourcePath] {
        if !query.allDescendants { return Array(byCollection[query.collectionPath] ?? []) }
        return byCollection.filter { query.containsPath($0.key.appending("x")) }.flatMap(\.value)
    }

    public var count: Int { entries.count }

    /// Bytes held, as Firestore sizes documents (name, fields, 32 bytes of overhead); a
    /// known-missing document counts its name and a version. Kept up to date on every change.
    public private(set) var byteSize = 0

    static func size(_ path: ResourcePath, _ entry: RemoteDocument) -> Int {
        switch entry {
        case .found(let doc, _): DocumentLimits.documentSize(path: doc.path, fields: doc.fields)
        case .missing: DocumentLimits.nameSize(path) + 8
        }
    }

    public mutating func removeAll() {
        entries.removeAll()
        byCollection.removeAll()
        byteSize = 0
        indexes.clearEntries()
    }
}
