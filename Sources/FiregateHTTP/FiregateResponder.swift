import FiregateModel
import Hummingbird

/// Routes every request by the shape of its path (DESIGN §1): `/clients/…` → edge,
/// `/v1/projects/…` → documents, `/emulator/…` and `/healthz` → operations, `….json` → tree.
///
/// One responder rather than a route trie because Firestore names carry `:verb` suffixes and
/// arbitrary depth, which a segment router cannot express.
public struct FiregateResponder: HTTPResponder {
    public typealias Context = BasicRequestContext

    let documents: DocumentRoutes
    let tree: TreeRoutes
    let operations: OperationRoutes
    let clients: ClientRoutes

    public func respond(to request: Request, context: Context) async throws -> Response {
        let path = request.uri.path
        if path.hasPrefix("/clients") && (path.count == 8 || path.dropFirst(8).first == "/") {
            return await clients.respond(to: request, context: context)
        }
        if path.hasPrefix("/v1/") {
            return await documents.respond(to: request, context: context)
        }
        if path.hasPrefix("/emulator/") || path == "/healthz" {
            return await operations.respond(to: request, context: context)
        }
        if path.hasSuffix(".json") || path.hasSuffix(".json/") {
            return await tree.respond(to: request, context: context)
        }
        return ErrorResponse.firestore(.notFound("No route for \(request.method) \(path)"))
    }
}
