/// A Firestore bundle, the SDK's way to seed a cache (`loadBundle`): a sequence of elements,
/// each the byte length of its JSON in decimal followed by the JSON. The first is the bundle's
/// metadata; then named queries, and documents as a `documentMetadata` element followed, when
/// the document exists, by its `document` element. `totalBytes` counts every element after the
/// metadata, length prefixes included (bundle_reader.ts, bundle.proto).
public struct FirestoreBundle: Sendable {
    public struct Metadata: Sendable, Equatable {
        public var id: String
        public var createTime: Timestamp
        public var version: Int64
        public var totalDocuments: Int64
        public var totalBytes: Int64

        public init(id: String, createTime: Timestamp, version: Int64 = 1, totalDocuments: Int64, totalBytes: Int64) {
            self.id = id
            self.createTime = createTime
            self.version = version
            self.totalDocuments = totalDocuments
            self.totalBytes = totalBytes
        }
    }

    /// A query saved under a name, read at `readTime` (bundle.proto's NamedQuery). The
    /// structured query is kept as sent, so it is given back exactly.
    public struct NamedQuery: Sendable, Equatable {
        public var name: String
        public var readTime: Timestamp
        /// The parent's full resource name (`projects/p/databases/d/documents[/…]`).
        public var parent: String
        public var structuredQuery: JSON
        /// limitType LAST: the SDK's limitToLast.
        public var limitToLast: Bool

        public init(name: String, readTime: Timestamp, parent: String, structuredQuery: JSON, limitToLast: Bool) {
            self.name = name
            self.readTime = readTime
            self.parent = parent
            self.structuredQuery = structuredQuery
            self.limitToLast = limitToLast
        }

        /// The query it names, in `database`.
        public func query(database: DatabaseID) throws(FiregateError) -> Query {
            var query = try Query(structuredQuery: structuredQuery, parent: try database.path(fromName: parent), database: database)
            query.limitToLast = limitToLast
            return query
        }

        /// `{"name","readTime","bundledQuery":{"parent","structuredQuery","limitType"}}`.
        public var json: JSON {
            ["name": .string(name), "readTime": .string(readTime.rfc3339),
             "bundledQuery": ["parent": .string(parent), "structuredQuery": structuredQuery, "limitType": .string(limitToLast ? "LAST" : "FIRST")]]
        }
    }

    /// A document as of the bundle's read: found (with its fields) or known missing.
    public struct BundledDocument: Sendable, Equatable {
        public var path: ResourcePath
        public var readTime: Timestamp
        /// Names of the bundle's queries whose results hold it.
        public var queries: [String]
        /// nil: the document did not exist at `readTime`.
        public var document: Document?

        public init(path: ResourcePath, readTime: Timestamp, queries: [String] = [], document: Document?) {
            self.path = path
            self.readTime = readTime
            self.queries = queries
            self.document = document
        }
    }

    public var metadata: Metadata
    public var namedQueries: [NamedQuery]
    public var documents: [BundledDocument]
    /// Each element after the metadata: its size with its length prefix, and whether the
    /// loader counts a document when it is read (a `document`, or a missing one's metadata).
    public var elements: [(bytes: Int64, completesDocument: Bool)]

    public init(metadata: Metadata, namedQueries: [NamedQuery], documents: [BundledDocument]) {
        self.metadata = metadata
        self.namedQueries = namedQueries
        self.documents = documents
        self.elements = []
    }

}

/// A loadBundle task's progress (the SDK's LoadBundleTaskProgress).
public struct LoadBundleProgress: Sendable, Equatable {
    public enum TaskState: String, Sendable { case running = "Running", success = "Success", error = "Error" }
    public var documentsLoaded: Int64
    public var totalDocuments: Int64
    public var bytesLoaded: Int64
    public var totalBytes: Int64
    public var taskState: TaskState

    public init(documentsLoaded: Int64, totalDocuments: Int64, bytesLoaded: Int64, totalBytes: Int64, taskState: TaskState) {
        self.documentsLoaded = documentsLoaded
        self.totalDocuments = totalDocuments
        self.bytesLoaded = bytesLoaded
        self.totalBytes = totalBytes
        self.taskState = taskState
    }

    public var json: JSON {
        ["taskState": .string(taskState.rawValue), "documentsLoaded": .int(documentsLoaded), "totalDocuments": .int(totalDocuments),
         "bytesLoaded": .int(bytesLoaded), "totalBytes": .int(totalBytes)]
    }

    /// What the SDK reports before the first element (bundleInitialProgress).
    public static func initial(_ metadata: FirestoreBundle.Metadata) -> LoadBundleProgress {
        LoadBundleProgress(documentsLoaded: 0, totalDocuments: metadata.totalDocuments, bytesLoaded: 0, totalBytes: metadata.totalBytes, taskState: .running)
    }

    /// A bundle already loaded, or loaded whole (bundleSuccessProgress).
    public static func success(_ metadata: FirestoreBundle.Metadata) -> LoadBundleProgress {
        LoadBundleProgress(documentsLoaded: metadata.totalDocuments, totalDocuments: metadata.totalDocuments,
                           bytesLoaded: metadata.totalBytes, totalBytes: metadata.totalBytes, taskState: .success)
    }
}

extension FirestoreBundle {
    /// The loader's progress as it reads the elements: the initial one, one each time a document
    /// is counted, and the final one (BundleLoader.addSizedElement, complete).
    public var progress: [LoadBundleProgress] {
        var current = LoadBundleProgress.initial(metadata)
        var updates = [current]
        for element in elements {
            current.bytesLoaded += element.bytes
            if element.completesDocument {
                current.documentsLoaded += 1
                updates.append(current)
            }
        }
        current.taskState = .success
        updates.append(current)
        return updates
    }
}
