/// A Firestore database: `projects/{project}/databases/{database}`.
public struct DatabaseID: Sendable, Hashable, CustomStringConvertible {
    public let project: String
    public let database: String

    public init(project: String, database: String = "(default)") {
        self.project = project
        self.database = database
    }

    /// `projects/p/databases/d`
    public var name: String { "projects/\(project)/databases/\(database)" }
    /// `projects/p/databases/d/documents`
    public var documentsRoot: String { name + "/documents" }
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
        guard name.hasPrefix(root + "/") else {
            if name.hasPrefix("projects/"), name.contains("/documents") {
                throw .invalidArgument("Document name \"\(name)\" lies outside the database \(self.name).")
            }
            throw .invalidArgument("Invalid resource name \"\(name)\"; expected \(root)/…")
        }
        let rest = name.dropFirst(root.count + 1)
        return try ResourcePath.parse(String(rest))
    }
}
