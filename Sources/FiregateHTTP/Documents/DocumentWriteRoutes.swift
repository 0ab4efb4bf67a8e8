import FiregateBackend
import FiregateModel
import FiregateStore
import Hummingbird

/// createDocument, patch, delete, commit, batchWrite, beginTransaction and rollback.
extension DocumentRoutes {
    func createDocument(_ database: DocumentDatabase, _ collection: ResourcePath, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        let body = try await request.jsonObjectBody()
        let path = try await DocumentCalls.createDocument(database, collection, id: params.first("documentId"), document: body, judge: judge)
        return JSONResponse.make(try DocumentCalls.written(database, path, mask: try params.mask()))
    }

    func patchDocument(_ database: DocumentDatabase, _ path: ResourcePath, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        let body = try await request.jsonObjectBody()
        let maskPaths = params.all("updateMask.fieldPaths")
        try await DocumentCalls.updateDocument(database, path, document: body, updateMask: maskPaths.isEmpty ? nil : maskPaths,
                                               precondition: try params.precondition(), judge: judge)
        return JSONResponse.make(try DocumentCalls.written(database, path, mask: try params.mask()))
    }

    func deleteDocument(_ database: DocumentDatabase, _ path: ResourcePath, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        _ = try await database.commit([Write(path: path, operation: .delete, precondition: try params.precondition())], judge: judge)
        return JSONResponse.make([:])
    }

    /// A commit; one carrying an edge client's queued batch from another replica commits once
    /// (`QueuedWrites`).
    func commit(_ database: DocumentDatabase, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        guard let receipt = try QueuedWrites.receipt(request.headers, forwarding: forwarding), let forwarding else {
            return JSONResponse.make(try await DocumentCalls.commit(database, body, judge: judge))
        }
        return JSONResponse.make(try await forwarding.queuedWrites.answer(receipt, directory: forwarding.directory) { () throws(FiregateError) in
            try await DocumentCalls.commit(database, body, judge: judge, receipt: receipt)
        })
    }

    func batchWrite(_ database: DocumentDatabase, _ request: Request, _ judge: DocumentRulesJudge?) async throws(FiregateError) -> Response {
        JSONResponse.make(try await DocumentCalls.batchWrite(database, try await request.jsonObjectBody(), judge: judge))
    }

    func beginTransaction(_ database: DocumentDatabase, _ request: Request) async throws(FiregateError) -> Response {
        JSONResponse.make(try DocumentCalls.beginTransaction(database, try await request.jsonObjectBody()))
    }

    func rollback(_ database: DocumentDatabase, _ request: Request) async throws(FiregateError) -> Response {
        try DocumentCalls.rollback(database, try await request.jsonObjectBody())
        return JSONResponse.make([:])
    }
}
