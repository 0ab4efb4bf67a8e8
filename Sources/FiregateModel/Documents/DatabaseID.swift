/// A Firestore database: `projects/{project}/databases/{database}`.
public struct DatabaseID: Sendable, Hashable, CustomStringConvertible {
    public let project: String
    public let database: String
    /// `projects/p/databases/d`
    public let name: String
    /// `projects/p/databases/d/documents`, kept because every write names a document under it.
    public let documentsRoot: String

    public init(project: String, database: String = "(default)") {
        self.project = project
        self.database = database
        let name = "projects/\(project)/databases/\(database)"
        self.name = name
        self.documentsRoot = name + "/documents"
    }

    public static func == (a: DatabaseID, b: DatabaseID) -> Bool { a.project == b.project && a.database == b.database }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(project)
        hasher.combine(database)
    }

    public var description: String { name }

    /// The full resource name of a document or collection path under this database.
    public func resourceName(_ path: ResourcePath) -> String {
        path.isEmpty ? documentsRoot : documentsRoot + "/" + path.canonical
    }

    /// Parses a full document/collection name of this database into a path; anything else
    /// (another database, malformed prefix) is INVALID_ARGUMENT.
    public func path(fromName name: String) throws(FiregateError) -> ResourcePath {
        let root = documentsRoot
        if name == root { return ResourcePath([]) }
        let afterRoot = name.utf8.dropFirst(root.utf8.count)
        guard name.utf8.starts(with: root.utf8), afterRoot.first == UInt8(ascii: "/") else {
            if name.hasPrefix("projects/"), name.contains("/documents") {
                throw .invalidArgument("Document name \"\(name)\" lies outside the database \(self.name).")
            }
            throw .invalidArgument("Invalid resource name \"\(name)\"; expected \(root)/…")
        }
        return try ResourcePath.parse(String(Substring(afterRoot.dropFirst())))
    }
}
