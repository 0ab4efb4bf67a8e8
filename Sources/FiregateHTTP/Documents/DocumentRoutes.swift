import FiregateBackend
import FiregateModel
import Hummingbird

/// The Firestore REST v1 surface: `/v1/projects/{p}/databases/{d}/documents…`.
struct DocumentRoutes: Sendable {
    let backend: Backend

    func respond(to request: Request, context: BasicRequestContext) async -> Response {
        ErrorResponse.firestore(FiregateError(.unimplemented, "Not implemented yet."))
    }
}
