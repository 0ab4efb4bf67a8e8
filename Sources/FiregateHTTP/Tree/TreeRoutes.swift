import FiregateBackend
import FiregateModel
import Hummingbird

/// The Realtime Database REST and streaming surface: `/{path}.json`.
struct TreeRoutes: Sendable {
    let backend: Backend

    func respond(to request: Request, context: BasicRequestContext) async -> Response {
        ErrorResponse.tree(FiregateError(.unimplemented, "The tree backend is not available yet."))
    }
}
