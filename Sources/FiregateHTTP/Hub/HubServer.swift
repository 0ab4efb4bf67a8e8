import FiregateModel
import FiregateSuite
import Foundation
import Hummingbird
import Logging

/// The Emulator Suite's hub on its own port (docs/firebase-cli.md): `GET /` and
/// `GET /emulators`, which `@firebase/rules-unit-testing` asks when only
/// `FIREBASE_EMULATOR_HUB` is set, and the Emulator UI and the CLI read. Pages on any origin may
/// ask, as the CLI's hub allows.
public enum HubServer {
    public static func makeApplication(plan: SuitePlan, logger: Logger,
                                       onRunning: @escaping @Sendable (_ port: Int) async -> Void) -> some ApplicationProtocol {
        let router = Router()
        router.add(middleware: HubCrossOrigin())
        let pid = ProcessInfo.processInfo.processIdentifier
        router.get("/") { _, _ in json(HubDocuments.locator(plan: plan, pid: pid)) }
        router.get("/emulators") { _, _ in json(HubDocuments.emulators(plan: plan, pid: pid)) }
        return Application(
            router: router,
            configuration: .init(address: .hostname(plan.hub.bindHost, port: plan.hub.port), serverName: FiregateServer.serverName),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? plan.hub.port) },
            logger: logger
        )
    }

    /// Two-space indented, as the CLI's hub answers.
    private static func json(_ value: JSON) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                 body: .init(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(value, style: .pretty))))
    }
}

/// `CrossOrigin` as router middleware.
struct HubCrossOrigin<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await CrossOrigin().handle(request, context: context, next: next)
    }
}
