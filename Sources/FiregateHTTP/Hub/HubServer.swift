import FiregateModel
import FiregateSuite
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// The Emulator Suite's hub on its own port (docs/firebase-cli.md): `GET /` and
/// `GET /emulators`, which `@firebase/rules-unit-testing` asks when only
/// `FIREBASE_EMULATOR_HUB` is set, and the Emulator UI and the CLI read; and `POST /_admin/export`,
/// by which `emulators:export` (Firegate's and the CLI's) writes the export directory. Pages on
/// any origin may ask, as the CLI's hub allows.
public enum HubServer {
    /// `export` writes the export directory at the path it is given.
    public static func makeApplication(plan: SuitePlan, logger: Logger, export: @escaping @Sendable (String) async throws -> Void,
                                       onRunning: @escaping @Sendable (_ port: Int) async -> Void) -> some ApplicationProtocol {
        let router = Router()
        router.add(middleware: HubCrossOrigin())
        let pid = ProcessInfo.processInfo.processIdentifier
        router.get("/") { _, _ in json(HubDocuments.locator(plan: plan, pid: pid)) }
        router.get("/emulators") { _, _ in json(HubDocuments.emulators(plan: plan, pid: pid)) }
        // `{"path": "/abs/dir", "initiatedBy": …, "targets": […]}` → `{"message": "OK"}`, or 500 with the reason.
        router.post("/_admin/export") { request, _ in
            let body = try? await request.jsonObjectBody()
            guard let path = body?["path"]?.stringValue, path.hasPrefix("/") else {
                return json(.object(["message": .string("path must be an absolute folder path.")]), status: .badRequest)
            }
            do {
                try await export(path)
            } catch {
                logger.warning("export failed", metadata: ["path": .string(path), "error": .string("\(error)")])
                return json(.object(["message": .string("Export failed: \((error as? FiregateError)?.message ?? "\(error)")")]), status: .internalServerError)
            }
            return json(.object(["message": .string("OK")]))
        }
        return Application(
            router: router,
            configuration: .init(address: .hostname(plan.hub.bindHost, port: plan.hub.port), serverName: FiregateServer.serverName),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? plan.hub.port) },
            logger: logger
        )
    }

    /// Asks the hub at `origin` (`http://host:port`) to export into `path`: nil when it did, else
    /// the reason (`firegate emulators:export`).
    public static func requestExport(origin: String, path: String) async -> String? {
        var client = ForwardingClient()
        client.timeout = .minutes(10)
        let body = JSONWriter.bytes(.object(["path": .string(path), "initiatedBy": .string("emulators:export")]))
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/_admin/export")
        head.headers.add(name: "Content-Type", value: "application/json")
        head.headers.add(name: "Content-Length", value: String(body.count))
        do {
            let answer = try await client.send(to: origin, head: head, body: ByteBuffer(bytes: body))
            if answer.status == 200 { return nil }
            let message = (try? JSONParser.parse(Array(answer.body.readableBytesView)))?["message"]?.stringValue
            return message ?? "HTTP \(answer.status)"
        } catch {
            return error.message
        }
    }

    /// Two-space indented, as the CLI's hub answers.
    private static func json(_ value: JSON, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(value, style: .pretty))))
    }
}

/// `CrossOrigin` as router middleware.
struct HubCrossOrigin<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await CrossOrigin().handle(request, context: context, next: next)
    }
}
