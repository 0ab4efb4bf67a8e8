import FiregateModel

/// Resource names as gRPC requests carry them (never percent-encoded, unlike REST paths):
/// `projects/{p}/databases/{d}` and `projects/{p}/databases/{d}/documents[/{path}]`. Split as
/// UTF-8 bytes: every call's names go through here.
enum FirestoreResourceName {
    static func database(_ name: String) throws(FiregateError) -> DatabaseID {
        let parts = name.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 4, let database = database(parts) else {
            throw .invalidArgument("Invalid database name \"\(name)\"; expected projects/{project_id}/databases/{database_id}.")
        }
        return database
    }

    /// The database and the path below its documents root (empty for the root itself).
    static func document(_ name: String) throws(FiregateError) -> (DatabaseID, ResourcePath) {
        let parts = name.utf8.split(separator: UInt8(ascii: "/"), maxSplits: 5, omittingEmptySubsequences: false)
        guard parts.count >= 5, parts[4].elementsEqual("documents".utf8), let database = database(parts) else {
            throw .invalidArgument("Invalid resource name \"\(name)\"; expected projects/{project_id}/databases/{database_id}/documents/….")
        }
        return (database, parts.count == 6 ? try ResourcePath.parse(String(Substring(parts[5]))) : ResourcePath([]))
    }

    /// `projects/{p}/databases/{d}` from a name's first four segments.
    private static func database(_ parts: [Substring.UTF8View]) -> DatabaseID? {
        guard parts[0].elementsEqual("projects".utf8), parts[2].elementsEqual("databases".utf8), !parts[1].isEmpty, !parts[3].isEmpty else { return nil }
        return DatabaseID(project: String(Substring(parts[1])), database: String(Substring(parts[3])))
    }
}
