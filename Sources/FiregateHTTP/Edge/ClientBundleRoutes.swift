import FiregateEdge
import FiregateModel
import Hummingbird
import NIOCore

/// Bundles through a client: `POST /clients/{id}:loadBundle` (the SDK's `loadBundle`) and
/// `GET /clients/{id}/namedQueries/{name}` (its `namedQuery`).
struct ClientBundleRoutes {
    let client: EdgeClient

    /// The body is the bundle. The answer is the task's final progress, or with
    /// `Accept: text/event-stream` every progress update (`event: progress`), the last final.
    func load(_ request: Request) async throws(FiregateError) -> Response {
        let updates = try await client.loadBundle(try await request.bodyBytes())
        guard request.headers[.accept]?.contains("text/event-stream") == true else {
            return JSONResponse.make(updates.last?.json ?? [:])
        }
        var frames = ByteBuffer()
        for update in updates { frames.writeImmutableBuffer(ServerSentEvents.frame(event: "progress", json: update.json)) }
        return Response(status: .ok, headers: ServerSentEvents.headers, body: ResponseBody(byteBuffer: frames))
    }

    /// `name` is the rest of the path, percent-decoded.
    func namedQuery(_ name: String) async throws(FiregateError) -> Response {
        guard !name.isEmpty else { throw .invalidArgument("A named query's name is missing: GET /clients/{id}/namedQueries/{name}.") }
        return JSONResponse.make(try await client.namedQuery(name).json)
    }
}
