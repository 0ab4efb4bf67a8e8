import FiregateBackend
import FiregateModel
import Hummingbird

/// Health and emulator operations: `/healthz`, `/emulator/v1/…`.
struct OperationRoutes: Sendable {
    let backend: Backend

    func respond(to request: Request, context: BasicRequestContext) async -> Response {
        let path = request.uri.path
        if path == "/healthz" {
            return JSONResponse.make(["status": "ok"])
        }
        do {
            return try await emulator(request, path: path)
        } catch {
            return ErrorResponse.firestore(error)
        }
    }

    func emulator(_ request: Request, path: String) async throws(FiregateError) -> Response {
        // DELETE /emulator/v1/projects/{p}/databases/{d}/documents: clear one database.
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { PercentDecoding.decode(String($0)) }
        if segments.count == 7, segments[0] == "emulator", segments[1] == "v1", segments[2] == "projects", segments[4] == "databases",
           segments[6] == "documents" {
            guard request.method == .delete else { throw .notFound("No route for \(request.method) \(path): only DELETE is served here.") }
            let database = backend.documents.database(DatabaseID(project: segments[3], database: segments[5]))
            do {
                try await database.reset()
            } catch {
                throw .internal("Reset failed: \(error)")
            }
            return JSONResponse.make([:])
        }
        throw .notFound("No route for \(request.method) \(path)")
    }
}
