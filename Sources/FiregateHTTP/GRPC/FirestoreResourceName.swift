import FiregateModel

/// Resource names as gRPC requests carry them (never percent-encoded, unlike REST paths):
/// `projects/{p}/databases/{d}` and `projects/{p}/databases/{d}/documents[/{path}]`.
enum FirestoreResourceName {
    static func database(_ name: String) throws(FiregateError) -> DatabaseID {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "projects", parts[2] == "databases", !parts[1].isEmpty, !parts[3].isEmpty else {
            throw .invalidArgument("Invalid database name \"\(name)\"; expected projects/{project_id}/databases/{database_id}.")
        }
        return DatabaseID(project: String(parts[1]), database: String(parts[3]))
    }

    /// The database and the path below its documents root (empty for the root itself).
    static func document(_ name: String) throws(FiregateError) -> (DatabaseID, ResourcePath) {
        let parts = name.split(separator: "/", maxSplits: 5, omittingEmptySubsequences: false)
        guard parts.count >= 5, parts[0] == "projects", parts[2] == "databases", parts[4] == "documents", !parts[1].isEmpty, !parts[3].isEmpty else {
            throw .invalidArgument("Invalid resource name \"\(name)\"; expected projects/{project_id}/databases/{database_id}/documents/….")
        }
        let database = DatabaseID(project: String(parts[1]), database: String(parts[3]))
        return (database, try database.path(fromName: name))
    }
}
