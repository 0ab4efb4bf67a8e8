import FiregateModel

/// A parsed Firestore REST path: `/v1/projects/{p}/databases/{d}/documents[/{path}][:verb]`.
struct DocumentRequestPath: Equatable {
    let database: DatabaseID
    /// Relative to the documents root; empty for the root itself.
    let path: ResourcePath
    /// The custom method (`commit`, `runQuery`, `listen`, …), if any.
    let verb: String?

    static let verbs: Set<String> = [
        "listen", "runQuery", "runAggregationQuery", "listCollectionIds", "batchGet", "beginTransaction",
        "commit", "rollback", "batchWrite", "partitionQuery", "write", "listDocuments",
    ]

    /// Parses the raw (percent-encoded) request path. `prefix` is the part before `/v1/`
    /// (empty for the backend, `/clients/{id}` for an edge client).
    static func parse(_ raw: String, prefixLength: Int = 0) throws(FiregateError) -> DocumentRequestPath {
        var rest = raw.utf8.count > prefixLength ? Substring(raw.dropFirst(prefixLength)) : ""
        guard rest.hasPrefix("/v1/") else { throw .notFound("No route for \(raw)") }
        rest = rest.dropFirst(4)
        var segments = rest.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if segments.last == "" { segments.removeLast() }
        var verb: String?
        if var last = segments.last, let colon = last.lastIndex(of: ":") {
            let candidate = String(last[last.index(after: colon)...])
            if verbs.contains(candidate) {
                verb = candidate
                last = String(last[..<colon])
                segments[segments.count - 1] = last
            }
        }
        segments = try segments.map { segment throws(FiregateError) in try PercentDecoding.decode(segment) }
        guard segments.count >= 5, segments[0] == "projects", segments[2] == "databases", segments[4] == "documents",
              !segments[1].isEmpty, !segments[3].isEmpty
        else {
            throw .notFound("Unknown resource path \(raw); expected /v1/projects/{project}/databases/{database}/documents/…")
        }
        let database = DatabaseID(project: segments[1], database: segments[3])
        let relative = segments.dropFirst(5)
        let path = try ResourcePath.parse(relative.joined(separator: "/"))
        return DocumentRequestPath(database: database, path: path, verb: verb)
    }
}
