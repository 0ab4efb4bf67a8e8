import FiregateBackend
import FiregateModel
import Hummingbird

/// createDocument, patch, delete, commit, batchWrite, beginTransaction and rollback.
extension DocumentRoutes {
    func createDocument(_ database: DocumentDatabase, _ collection: ResourcePath, _ request: Request) async throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        let body = try await request.jsonObjectBody()
        let id = params.first("documentId").flatMap { $0.isEmpty ? nil : $0 } ?? AutoID.make()
        try ResourcePath.validateID(id)
        let path = collection.appending(id)
        if let name = body.member("name")?.stringValue, !name.isEmpty {
            throw .invalidArgument("A document to create must not have a name; use documentId.")
        }
        let fields = try Value.parseFields(body.member("fields"))
        try Write.validateFieldNames(fields)
        let write = Write(path: path, operation: .update(fields: fields, mask: nil), precondition: Precondition(exists: false))
        _ = try await database.commit([write])
        return try respondWithDocument(database, path, mask: try params.mask())
    }

    func patchDocument(_ database: DocumentDatabase, _ path: ResourcePath, _ request: Request) async throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        let body = try await request.jsonObjectBody()
        if let name = body.member("name")?.stringValue, !name.isEmpty, try database.id.path(fromName: name) != path {
            throw .invalidArgument("The document name in the body does not match the URL.")
        }
        let fields = try Value.parseFields(body.member("fields"))
        try Write.validateFieldNames(fields)
        var mask: [FieldPath]?
        let maskPaths = params.all("updateMask.fieldPaths")
        if !maskPaths.isEmpty {
            mask = try maskPaths.map { text throws(FiregateError) in try FieldPath.parseWritable(text) }
        }
        let write = Write(path: path, operation: .update(fields: fields, mask: mask), precondition: try params.precondition())
        _ = try await database.commit([write])
        return try respondWithDocument(database, path, mask: try params.mask())
    }

    func respondWithDocument(_ database: DocumentDatabase, _ path: ResourcePath, mask: [FieldPath]?) throws(FiregateError) -> Response {
        guard let document = try database.get(path).value else { throw notFound(database, path) }
        return JSONResponse.make(document.json(database: database.id, mask: mask))
    }

    func deleteDocument(_ database: DocumentDatabase, _ path: ResourcePath, _ request: Request) async throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        _ = try await database.commit([Write(path: path, operation: .delete, precondition: try params.precondition())])
        return JSONResponse.make([:])
    }

    static func parseWrites(_ body: JSON, _ database: DocumentDatabase) throws(FiregateError) -> [Write] {
        guard let list = body.member("writes"), list != .null else { return [] }
        guard let items = list.arrayValue else { throw .invalidArgument("writes must be a list.") }
        return try items.map { item throws(FiregateError) in try Write(json: item, database: database.id) }
    }

    func commit(_ database: DocumentDatabase, _ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        let writes = try DocumentRoutes.parseWrites(body, database)
        var transaction: String?
        if let tx = body.member("transaction"), tx != .null {
            guard let id = tx.stringValue else { throw .invalidArgument("transaction must be a base64 string.") }
            transaction = id
        }
        let result = try await database.commit(writes, transaction: transaction)
        return JSONResponse.make(result.json)
    }

    func batchWrite(_ database: DocumentDatabase, _ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        let writes = try DocumentRoutes.parseWrites(body, database)
        let results = try await database.batchWrite(writes)
        var writeResults: [JSON] = []
        var statuses: [JSON] = []
        for result in results {
            switch result {
            case .success(let writeResult):
                writeResults.append(writeResult.json)
                statuses.append([:])
            case .failure(let error):
                writeResults.append([:])
                statuses.append(["code": .int(Int64(error.status.code)), "message": .string(error.message)])
            }
        }
        return JSONResponse.make(["writeResults": .array(writeResults), "status": .array(statuses)])
    }

    func beginTransaction(_ database: DocumentDatabase, _ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        let options = try body.member("options").map { options throws(FiregateError) in try TransactionOptions(json: options) }
        let id = try database.beginTransaction(options ?? .readWrite(retrying: nil))
        return JSONResponse.make(["transaction": .string(id)])
    }

    func rollback(_ database: DocumentDatabase, _ request: Request) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        guard let id = body.member("transaction")?.stringValue, !id.isEmpty else {
            throw .invalidArgument("rollback needs a transaction.")
        }
        try database.rollback(id)
        return JSONResponse.make([:])
    }
}

extension CommitResult {
    /// `{"writeResults":[…],"commitTime":…}`; an empty list is left out, as proto3 JSON does.
    var json: JSON {
        var result: JSON = [:]
        if !writeResults.isEmpty { result = result.withMember("writeResults", .array(writeResults.map(\.json))) }
        return result.withMember("commitTime", .string(commitTime.rfc3339))
    }
}

extension WriteResult {
    /// `{"updateTime":…,"transformResults":[…]}`; `{}` for a delete.
    var json: JSON {
        var result: JSON = [:]
        if let updateTime { result = result.withMember("updateTime", .string(updateTime.rfc3339)) }
        if let transformResults { result = result.withMember("transformResults", .array(transformResults.map(\.json))) }
        return result
    }
}
