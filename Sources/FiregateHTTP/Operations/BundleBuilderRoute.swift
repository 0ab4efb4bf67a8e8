import FiregateBackend
import FiregateModel
import Hummingbird

/// `POST /emulator/v1/projects/{p}/databases/{d}:bundle`: a bundle of the backend's data, as
/// the Admin SDK's bundle builder (`firestore.bundle(id).add(…).build()`) makes one, so a test
/// can seed a client with `:loadBundle`. Body: `{"bundleId", "documents": [path…],
/// "namedQueries": [{"name", "parent"?, "structuredQuery", "limitType"?}]}`, paths relative to
/// the database's documents. Everything is read at one read time, the bundle's create time.
struct BundleBuilderRoute {
    let backend: Backend
    let database: DatabaseID

    func build(_ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        guard let bundleID = body["bundleId"]?.stringValue, !bundleID.isEmpty else {
            throw .invalidArgument("bundleId (a non-empty string) is required.")
        }
        let paths = try documentPaths(body["documents"])
        let queries = try namedQueries(body["namedQueries"])
        let documents = backend.documents.database(database)
        var consistency = ReadConsistency.latest
        var readTime: Timestamp?
        var bundled: [ResourcePath: FirestoreBundle.BundledDocument] = [:]
        var order: [ResourcePath] = []
        func add(_ path: ResourcePath, _ document: Document?, query: String?, at time: Timestamp) {
            if bundled[path] == nil {
                order.append(path)
                bundled[path] = FirestoreBundle.BundledDocument(path: path, readTime: time, document: document)
            }
            if let query, bundled[path]?.queries.contains(query) == false { bundled[path]?.queries.append(query) }
        }
        if !paths.isEmpty {
            let read = try documents.batchGet(paths, consistency: consistency)
            readTime = read.readTime
            consistency = .readTime(read.readTime)
            for (path, document) in read.value { add(path, document, query: nil, at: read.readTime) }
        }
        var named: [FirestoreBundle.NamedQuery] = []
        for (name, query, parent, structured) in queries {
            let read = try documents.runQuery(query, consistency: consistency)
            readTime = readTime ?? read.readTime
            consistency = .readTime(read.readTime)
            named.append(FirestoreBundle.NamedQuery(name: name, readTime: read.readTime, parent: database.resourceName(parent),
                                                    structuredQuery: structured, limitToLast: query.limitToLast))
            for document in read.value.documents { add(document.path, document, query: name, at: read.readTime) }
        }
        let bytes = FirestoreBundle.encode(id: bundleID, createTime: readTime ?? backend.clock.now(), namedQueries: named,
                                           documents: order.compactMap { bundled[$0] }, database: database)
        return JSONResponse.bytes(bytes, headers: [.contentType: "application/octet-stream"])
    }

    private func documentPaths(_ json: JSON?) throws(FiregateError) -> [ResourcePath] {
        guard let json, json != .null else { return [] }
        guard let items = json.arrayValue else { throw .invalidArgument("documents must be an array of document paths.") }
        var paths: [ResourcePath] = []
        for item in items {
            guard let text = item.stringValue else { throw .invalidArgument("documents must be an array of document paths.") }
            let path = try relativePath(text)
            guard path.isDocument else { throw .invalidArgument("\"\(text)\" in documents is not a document path.") }
            paths.append(path)
        }
        return paths
    }

    private func namedQueries(_ json: JSON?) throws(FiregateError) -> [(String, Query, ResourcePath, JSON)] {
        guard let json, json != .null else { return [] }
        guard let items = json.arrayValue else { throw .invalidArgument("namedQueries must be an array.") }
        var queries: [(String, Query, ResourcePath, JSON)] = []
        for item in items {
            guard let name = item["name"]?.stringValue, !name.isEmpty else { throw .invalidArgument("Each named query needs a name.") }
            guard !queries.contains(where: { $0.0 == name }) else { throw .invalidArgument("The named query \"\(name)\" appears twice.") }
            guard let structured = item["structuredQuery"], case .object = structured else {
                throw .invalidArgument("The named query \"\(name)\" needs structuredQuery (an object).")
            }
            let parent = try relativePath(item["parent"]?.stringValue ?? "")
            guard parent.isEmpty || parent.isDocument else { throw .invalidArgument("The named query \"\(name)\"'s parent must be the root or a document.") }
            var query = try Query(structuredQuery: structured, parent: parent, database: database)
            switch item["limitType"]?.stringValue {
            case nil, "FIRST": break
            case "LAST": query.limitToLast = true
            case let other?: throw .invalidArgument("The named query \"\(name)\" has limitType \(other); it is FIRST or LAST.")
            }
            queries.append((name, query, parent, structured))
        }
        return queries
    }

    /// `cities/SF`, with no empty segment.
    private func relativePath(_ text: String) throws(FiregateError) -> ResourcePath {
        let segments = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        if text.isEmpty { return ResourcePath([]) }
        guard !segments.contains(where: \.isEmpty) else { throw .invalidArgument("\"\(text)\" is not a path (an empty segment).") }
        return ResourcePath(segments)
    }
}
