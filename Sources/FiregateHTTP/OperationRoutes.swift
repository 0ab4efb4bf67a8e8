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
        return ErrorResponse.firestore(.notFound("No route for \(request.method) \(path)"))
    }
}
