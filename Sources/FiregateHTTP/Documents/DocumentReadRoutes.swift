import FiregateBackend
import FiregateModel
import Hummingbird

/// get, list, batchGet, runQuery, runAggregationQuery and listCollectionIds.
extension DocumentRoutes {
    func getDocument(_ database: DocumentDatabase, _ path: ResourcePath, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        let mask = try params.mask()
        let consistency = try params.consistency()
        if let judge {
            // Judged before the answer: a denied caller learns nothing, not even existence.
            let document = try database.get(path, consistency: consistency).value
            try judge.get([(path, document)], in: database)
            guard let document else { throw notFound(database, path) }
            return JSONResponse.make(document.json(database: database.id, mask: mask))
        }
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

    func listDocuments(_ database: DocumentDatabase, _ collection: ResourcePath, _ request: Request, _ judge: DocumentRulesJudge?) throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        return JSONResponse.make(try DocumentCalls.listDocuments(
            database, collection, mask: try params.mask(), pageSize: try params.int("pageSize"), pageToken: params.first("pageToken"),
            orderBy: params.first("orderBy") ?? "", showMissing: try params.bool("showMissing") ?? false, consistency: try params.consistency(), judge: judge))
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

    func batchGet(_ database: DocumentDatabase, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        JSONResponse.make(.array(try DocumentCalls.batchGet(database, try await request.jsonObjectBody(), judge: judge)))
    }

    static func mask(_ json: JSON?) throws(FiregateError) -> [FieldPath]? {
        guard let json, json != .null else { return nil }
        return try (json.member("fieldPaths")?.arrayValue ?? []).map { item throws(FiregateError) in
            guard let text = item.stringValue else { throw .invalidArgument("mask.fieldPaths must be strings.") }
            return try FieldPath.parse(text)
        }
    }

    func runQuery(_ database: DocumentDatabase, _ parent: ResourcePath, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        JSONResponse.make(.array(try DocumentCalls.runQuery(database, parent, try await request.jsonObjectBody(), judge: judge)))
    }

    func runAggregationQuery(_ database: DocumentDatabase, _ parent: ResourcePath, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        JSONResponse.make(.array(try DocumentCalls.runAggregationQuery(database, parent, try await request.jsonObjectBody(), judge: judge)))
    }

    func listCollectionIDs(_ database: DocumentDatabase, _ parent: ResourcePath, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        JSONResponse.make(try DocumentCalls.listCollectionIDs(database, parent, try await request.jsonObjectBody(), judge: judge))
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
