import DequeModule
import FiregateModel
import FiregateRules

/// The in-memory state of one document database: documents with their encoded form,
/// collection indexes, recent commit history and open transactions.
struct DatabaseState {
    /// A stored document and its cached wire encodings, JSON and protobuf (each made on first read).
    struct Entry {
        var document: Document
        var encoded: [UInt8]?
        var encodedMessage: [UInt8]?
        /// The document as security rules read it (`resource`), made once per version.
        var rulesResource: RulesValue?
    }

    var documents: [ResourcePath: Entry] = [:]
    /// Collection path → the documents directly in it.
    var collections: [ResourcePath: Set<ResourcePath>] = [:]
    /// Collection id → the non-empty collections of that id (collection groups). Kept per
    /// collection, not per document, so a new document costs one set insert, not two.
    var groups: [String: Set<ResourcePath>] = [:]
    /// Recent commits, oldest first, for read-time reads and listen resumption.
    var history: Deque<CommitRecord> = []
    var sequence: Int64 = 0
    var transactions: [String: TransactionState] = [:]
    /// A batch failed to reach the disk: the state is being reloaded from storage, and commits
    /// are refused until it is.
    var recovering = false
    /// Writers told of a failed batch once the reload that drops it is done (`recoverFromStorage`).
    var afterReload: [@Sendable () -> Void] = []
    /// Commit time of the newest commit dropped from `history` (reads before it are refused).
    var prunedThrough: Timestamp?

    /// How much history is kept: read times and resume tokens older than this are refused.
    static let historyMicros: Int64 = 60 * 60 * 1_000_000
    static let historyMaxRecords = 20_000
    /// Storage size of the documents the history holds, at most.
    static let historyMaxBytes = 64 * 1024 * 1024
    var historyBytes = 0

    /// Stores `document`; `rulesResource` is its resource as rules read it, when a judge made it.
    mutating func put(_ document: Document, rulesResource: RulesValue? = nil) {
        let path = document.path
        var entry = Entry(document: document)
        entry.rulesResource = rulesResource
        if documents.updateValue(entry, forKey: path) == nil {
            let collection = path.parent
            if collections[collection] == nil { groups[collection.lastSegment, default: []].insert(collection) }
            collections[collection, default: []].insert(path)
        }
    }

    mutating func remove(_ path: ResourcePath) {
        guard documents.removeValue(forKey: path) != nil else { return }
        let collection = path.parent
        collections[collection]?.remove(path)
        guard collections[collection]?.isEmpty == true else { return }
        collections[collection] = nil
        groups[collection.lastSegment]?.remove(collection)
        if groups[collection.lastSegment]?.isEmpty == true { groups[collection.lastSegment] = nil }
    }

    mutating func record(_ commit: CommitRecord) {
        history.append(commit)
        historyBytes += DatabaseState.size(of: commit)
        let horizon = commit.commitTime.microseconds - DatabaseState.historyMicros
        while let first = history.first, history.count > 1,
              history.count > DatabaseState.historyMaxRecords || historyBytes > DatabaseState.historyMaxBytes
                || first.commitTime.microseconds < horizon {
            history.removeFirst()
            historyBytes -= DatabaseState.size(of: first)
            prunedThrough = first.commitTime
        }
    }

    static func size(of commit: CommitRecord) -> Int {
        commit.changes.reduce(0) { total, change in
            total + [change.before, change.after].reduce(0) { $0 + ($1.map { DocumentLimits.documentSize(path: $0.path, fields: $0.fields) } ?? 0) }
        }
    }

    /// The document as of `time` (nil = now), undoing later commits from the history.
    func document(_ path: ResourcePath, at time: Timestamp?) -> Document? {
        var current = documents[path]?.document
        guard let time else { return current }
        for commit in history.reversed() {
            if commit.commitTime <= time { break }
            if let change = commit.changes.first(where: { $0.path == path }) { current = change.before }
        }
        return current
    }

    /// Candidate documents for a query as of `time` (nil = now).
    func candidates(for query: Query, at time: Timestamp?) -> [Document] {
        var paths: Set<ResourcePath>
        if query.allDescendants {
            paths = []
            if query.collectionID.isEmpty {
                for (collection, members) in collections where query.parent.isPrefix(of: collection) { paths.formUnion(members) }
            } else {
                for collection in groups[query.collectionID] ?? [] where query.parent.isPrefix(of: collection) {
                    paths.formUnion(collections[collection] ?? [])
                }
            }
        } else {
            paths = collections[query.collectionPath] ?? []
        }
        if let time {
            for commit in history.reversed() {
                if commit.commitTime <= time { break }
                for change in commit.changes where query.containsPath(change.path) { paths.insert(change.path) }
            }
        }
        return paths.compactMap { document($0, at: time) }.filter { query.containsPath($0.path) }
    }

    /// Every document path, for listings that need the whole key space.
    var allPaths: Dictionary<ResourcePath, Entry>.Keys { documents.keys }
}
