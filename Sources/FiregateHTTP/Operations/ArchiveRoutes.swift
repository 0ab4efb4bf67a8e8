import FiregateBackend
import FiregateEdge
import FiregateModel
import Hummingbird

/// `GET|POST /emulator/v1/export` and `POST /emulator/v1/import` (see `EmulatorArchive`).
struct ArchiveRoutes {
    let backend: Backend
    let clients: EdgeClients

    /// GET: documents and tree. POST `{"clients": true}`: also every client's settings, cache
    /// and queue. Sent gzip-compressed to clients that accept gzip.
    func export(_ request: Request) async throws(FiregateError) -> Response {
        var includeClients = false
        if request.method == .post {
            let body = try await request.jsonObjectBody()
            if let flag = body["clients"], flag != .null {
                guard let value = flag.boolValue else { throw .invalidArgument("clients must be a boolean.") }
                includeClients = value
            }
        }
        let bytes: [UInt8]
        do {
            bytes = try await EmulatorArchive.export(backend: backend, clients: clients, includeClients: includeClients)
        } catch {
            throw ErrorResponse.normalize(error)
        }
        return JSONResponse.bytes(bytes, headers: [.contentDisposition: "attachment; filename=\"firegate-export.json\""])
    }

    /// The archive bytes as exported (JSON or gzip) as the body; all or nothing.
    func `import`(_ request: Request) async throws(FiregateError) -> Response {
        let bytes: [UInt8]
        do {
            let buffer = try await request.body.collect(upTo: EmulatorArchive.maxBytes)
            bytes = Array(buffer.readableBytesView)
        } catch {
            throw .invalidArgument("The archive is larger than \(EmulatorArchive.maxBytes) bytes or could not be read.")
        }
        let contents = try EmulatorArchive.parse(bytes, defaultProject: backend.defaultProject)
        do {
            try await EmulatorArchive.restore(contents, backend: backend, clients: clients)
        } catch {
            throw ErrorResponse.normalize(error)
        }
        return JSONResponse.make([
            "documents": .int(Int64(contents.documentCount)), "namespaces": .int(Int64(contents.namespaces.count)),
            "clients": .int(Int64(contents.clients?.count ?? 0)),
        ])
    }
}
