import FiregateBackend
import FiregateEdge
import FiregateModel
import Foundation
import Hummingbird
import Logging

/// Everything needed to start a server; the executable fills it from flags and environment.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Where SQLite lives; nil keeps nothing (`--in-memory`).
    public var dataDirectory: URL? = URL(fileURLWithPath: ".firegate")
    public var project = "demo-project"
    public var logLevel: Logger.Level = .info
    public var listen = ListenOptions()

    public init() {}
}

/// Builds the Hummingbird application serving every surface from one backend.
public enum FiregateServer {
    public static func makeResponder(backend: Backend, clients: EdgeClients, listen: ListenOptions = ListenOptions()) -> FiregateResponder {
        let documents = DocumentRoutes(backend: backend, listenOptions: listen)
        return FiregateResponder(
            documents: documents,
            tree: TreeRoutes(backend: backend),
            operations: OperationRoutes(backend: backend),
            clients: ClientRoutes(clients: clients, documents: documents)
        )
    }

    /// Opens the backend (and the edge clients' tables) as configured.
    public static func openBackend(_ configuration: ServerConfiguration) async throws -> Backend {
        try await Backend(directory: configuration.dataDirectory, defaultProject: configuration.project, extraMigrations: EdgeClients.migrations)
    }

    public static func makeApplication(configuration: ServerConfiguration, backend: Backend) -> some ApplicationProtocol {
        let clients = EdgeClients(backend: backend)
        var logger = Logger(label: "firegate")
        logger.logLevel = configuration.logLevel
        return Application(
            responder: makeResponder(backend: backend, clients: clients, listen: configuration.listen),
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "firegate"),
            logger: logger
        )
    }
}
