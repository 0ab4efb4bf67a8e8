import FiregateBackend
import FiregateModel
import Hummingbird

/// get, list, batchGet, runQuery, runAggregationQuery and listCollectionIds.
extension DocumentRoutes {
    func getDocument(_ database: DocumentDatabase, _ path: ResourcePath, _ request: Request) async throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        let mask = try params.mask()
        let consistency = try params.consistency()
        if mask == nil, consistency == .latest {
            // Fast path: the cached encoding of the current version.
            guard let bytes = database.encodedDocument(path) else { throw notFound(database, path) }
            return JSONResponse.bytes(bytes)
        }
        guard let document = try database.get(path, consistency: consistency).value else { throw notFound(database, path) }
        return JSONResponse.make(document.json(database: database.id, mask: mask))
    }

    func notFound(_ database: DocumentDatabase, _ path: ResourcePath) -> FiregateError {
        DocumentRoutes.notFound(database.id, path)
    }

    static func notFound(_ database: DatabaseID, _ path: ResourcePath) -> FiregateError {
        .notFound("Document \"\(database.resourceName(path))\" not found.")
    }

    func listDocuments(_ database: DocumentDatabase, _ collection: ResourcePath, _ request: Request) throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        let mask = try params.mask()
        let pageSize = try params.int("pageSize")
        let offset = try PageToken.offset(params.first("pageToken"))
        let orderBy = try DocumentRoutes.parseOrderBy(params.first("orderBy") ?? "")
        let showMissing = try params.bool("showMissing") ?? false
        let limit = pageSize.map { $0 == 0 ? 300 : $0 }
        let listed = try database.list(collection: collection, orderBy: orderBy, offset: offset, limit: limit.map { $0 + 1 },
                                       showMissing: showMissing, consistency: try params.consistency())
        var page = listed.value
        var body: [String: JSON] = [:]
        if let limit, page.count > limit {
            page.removeLast()
            body["nextPageToken"] = .string(PageToken.make(offset: offset + limit))
        }
        let documents = page.map { entry -> JSON in
            switch entry {
            case .found(let doc): doc.json(database: database.id, mask: mask)
            case .missing(let path): ["name": .string(database.id.resourceName(path))]
            }
        }
        var json: JSON = [:]
        if !documents.isEmpty { json = ["documents": .array(documents)] }
        if let token = body["nextPageToken"], case .object(var members) = json {
            members["nextPageToken"] = token
            json = .object(members)
        }
        return JSONResponse.make(json)
    }

    /// `orderBy=a desc, __name__` as in ListDocuments.
    static func parseOrderBy(_ text: String) throws(FiregateError) -> [Query.Ordering] {
        var result: [Query.Ordering] = []
        for part in text.split(separator: ",") {
            let words = part.split(separator: " ").map(String.init)
            guard let field = words.first else { continue }
            let descending: Bool
            switch words.dropFirst().first?.lowercased() {
            case nil, "asc": descending = false
            case "desc": descending = true
            default: throw .invalidArgument("Invalid orderBy \"\(text)\".")
            }
            guard words.count <= 2 else { throw .invalidArgument("Invalid orderBy \"\(text)\".") }
            result.append(Query.Ordering(field: try FieldPath.parse(field), descending: descending))
        }
        return result
    }

    func batchGet(_ database: DocumentDatabase, _ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        guard let names = body.member("documents")?.arrayValue else { throw .invalidArgument("batchGet needs a documents list.") }
        let paths = try names.map { item throws(FiregateError) -> ResourcePath in
            guard let name = item.stringValue else { throw .invalidArgument("documents must be names.") }
            let path = try database.id.path(fromName: name)
            guard path.isDocument else { throw .invalidArgument("\"\(name)\" is not a document name.") }
            return path
        }
        let mask = try DocumentRoutes.mask(body.member("mask"))
        let result = try database.batchGet(paths, consistency: try body.consistency())
        var items: [JSON] = []
        for (i, (path, doc)) in result.value.enumerated() {
            var entry: JSON = doc.map { ["found": $0.json(database: database.id, mask: mask)] } ?? ["missing": .string(database.id.resourceName(path))]
            entry = entry.withMember("readTime", .string(result.readTime.rfc3339))
            if i == 0, let tx = result.transaction { entry = entry.withMember("transaction", .string(tx)) }
            items.append(entry)
        }
        if items.isEmpty, let tx = result.transaction {
            items.append(["transaction": .string(tx), "readTime": .string(result.readTime.rfc3339)])
        }
        return JSONResponse.make(.array(items))
    }

    static func mask(_ json: JSON?) throws(FiregateError) -> [FieldPath]? {
        guard let json, json != .null else { return nil }
        return try (json.member("fieldPaths")?.arrayValue ?? []).map { item throws(FiregateError) in
            guard let text = item.stringValue else { throw .invalidArgument("mask.fieldPaths must be strings.") }
            return try FieldPath.parse(text)
        }
    }

    func runQuery(_ database: DocumentDatabase, _ parent: ResourcePath, _ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        guard let structured = body.member("structuredQuery"), structured != .null else {
            throw .invalidArgument("runQuery needs a structuredQuery.")
        }
        let query = try Query(structuredQuery: structured, parent: parent, database: database.id)
        let result = try database.runQuery(query, consistency: try body.consistency())
        let readTime = JSON.string(result.readTime.rfc3339)
        var items: [JSON] = result.value.documents.map { doc in
            ["document": doc.json(database: database.id, mask: query.projection), "readTime": readTime]
        }
        if items.isEmpty { items = [["readTime": readTime]] }
        if result.value.skipped > 0 { items[0] = items[0].withMember("skippedResults", .int(Int64(result.value.skipped))) }
        if let tx = result.transaction { items[0] = items[0].withMember("transaction", .string(tx)) }
        return JSONResponse.make(.array(items))
    }

    func runAggregationQuery(_ database: DocumentDatabase, _ parent: ResourcePath, _ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        guard let aggregationQuery = body.member("structuredAggregationQuery"), aggregationQuery != .null,
              let structured = aggregationQuery.member("structuredQuery"), structured != .null
        else {
            throw .invalidArgument("runAggregationQuery needs a structuredAggregationQuery with a structuredQuery.")
        }
        let query = try Query(structuredQuery: structured, parent: parent, database: database.id)
        let aggregations = try Aggregation.parseList(aggregationQuery.member("aggregations"))
        let result = try database.runAggregation(query, aggregations: aggregations, consistency: try body.consistency())
        var fields = JSON.object([:])
        for (alias, value) in result.value { fields = fields.withMember(alias, value.json) }
        var item: JSON = ["result": ["aggregateFields": fields], "readTime": .string(result.readTime.rfc3339)]
        if let tx = result.transaction { item = item.withMember("transaction", .string(tx)) }
        return JSONResponse.make([item])
    }

    func listCollectionIDs(_ database: DocumentDatabase, _ parent: ResourcePath, _ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        var ids = database.listCollectionIDs(parent: parent)
        if let token = body.member("pageToken")?.stringValue, !token.isEmpty {
            let after = try PageToken.collection(token)
            ids = ids.filter { Value.compareUTF8($0, after) > 0 }
        }
        var json: JSON = [:]
        if let size = body.member("pageSize")?.integerLike, size > 0, ids.count > size {
            ids = Array(ids.prefix(Int(size)))
            json = json.withMember("nextPageToken", .string(PageToken.make(collection: ids.last!)))
        }
        if !ids.isEmpty { json = json.withMember("collectionIds", .array(ids.map(JSON.string))) }
        return JSONResponse.make(json)
    }
}

/// Opaque page tokens: base64 of `o:<offset>` (documents) or `c:<last id>` (collections).
enum PageToken {
    static func make(offset: Int) -> String { Base64.encode(Array("o:\(offset)".utf8)) }
    static func make(collection: String) -> String { Base64.encode(Array("c:\(collection)".utf8)) }

    static func offset(_ token: String?) throws(FiregateError) -> Int {
        guard let token, !token.isEmpty else { return 0 }
        guard let bytes = Base64.decode(token), let text = String(bytes: bytes, encoding: .utf8), text.hasPrefix("o:"),
              let n = Int(text.dropFirst(2)), n >= 0
        else { throw .invalidArgument("Invalid page token.") }
        return n
    }

    static func collection(_ token: String) throws(FiregateError) -> String {
        guard let bytes = Base64.decode(token), let text = String(bytes: bytes, encoding: .utf8), text.hasPrefix("c:") else {
            throw .invalidArgument("Invalid page token.")
        }
        return String(text.dropFirst(2))
    }
}


import Foundation
