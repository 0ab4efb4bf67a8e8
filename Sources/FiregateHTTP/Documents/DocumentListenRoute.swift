import FiregateBackend
import FiregateModel
import Hummingbird

/// `:listen` over Server-Sent Events (filled in by the listen work).
struct DocumentListenRoute {
    let database: DocumentDatabase
    let options: ListenOptions

    func open(_ path: ResourcePath, _ request: Request) async throws(FiregateError) -> Response {
        throw FiregateError(.unimplemented, "listen is not available yet.")
    }
}
