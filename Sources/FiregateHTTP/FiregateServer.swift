import FiregateBackend
import FiregateEdge
import FiregateModel
import Foundation
import Hummingbird
import ServiceLifecycle
import HummingbirdCore
import HummingbirdHTTP2
import HummingbirdTLS
import Logging
import NIOSSL


/// Everything needed to start a server; the executable fills it from flags and environment.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// Where SQLite lives; nil keeps nothing (`--in-memory`).
    public var dataDirectory: URL? = URL(fileURLWithPath: ".firegate")
    public var project = "demo-project"
    public var logLevel: Logger.Level = .info
    public var listen = ListenOptions()
    /// The dashboard's files; nil looks for `Public/` (see `StaticFiles.locate`).
    public var publicDirectory: String?
    /// When set, `/emulator/…` and client control routes need it.
    public var adminToken: String?
    /// PEM files: with both set the server speaks HTTPS only.
    public var tlsCertificatePath: String?
    public var tlsKeyPath: String?
    /// Off, every HTTP/1.1 request takes the full (Hummingbird) path: for tests that compare the two.
    public var fastPath = true
    /// `--store`: a PostgreSQL URL keeps documents and the tree there (docs/replicas.md); nil keeps
    /// them in SQLite under `dataDirectory`.
    public var store: String?
    /// This replica's name among those sharing the PostgreSQL store (default host:port).
    public var replicaID: String?
    /// The URL other replicas reach this one at (default http://host:port).
    public var advertise: String?
    /// How long a replica's ownership of a scope lasts without renewal.
    public var leaseSeconds = 10
    /// What requests forwarded between replicas carry (`Firegate-Cluster-Secret`); nil: nothing.
    public var clusterSecret: String?

    public init() {}
}

/// Builds the Hummingbird application serving every surface from one backend.
public enum FiregateServer {
    public static func makeResponder(backend: Backend, clients: EdgeClients, configuration: ServerConfiguration = ServerConfiguration(),
                                     logger: Logger = Logger(label: "firegate")) -> FiregateResponder {
        var documents = DocumentRoutes(backend: backend, listenOptions: configuration.listen)
        // A forwarded request waits for the owner at most a lease: an owner silent that long has
        // lost its scopes, and the client's retry finds the next owner.
        backend.rules.trust(adminToken: configuration.adminToken)
        let forwarding = backend.replicas.map {
            OwnerForwarding(directory: $0, secret: configuration.clusterSecret,
                            client: ForwardingClient(timeout: .seconds(Int64(configuration.leaseSeconds))), admin: backend.rules.admin)
        }
        documents.forwarding = forwarding
        if let forwarding {
            backend.remoteCommits.install(OwnerCommitSender(forwarding: forwarding))
            backend.tree.remoteWrites.install(OwnerTreeWriteSender(forwarding: forwarding))
            let orphaned = OrphanedDisconnects(backend: backend, logger: logger)
            backend.replicas?.onOrphanedDisconnects { claimed in
                Task { await orphaned.run(claimed) }
            }
        }
        let connections = ConnectionRegistry(backend: backend)
        return FiregateResponder(
            documents: documents,
            tree: TreeRoutes(backend: backend, forwarding: forwarding),
            operations: OperationRoutes(backend: backend, clients: clients, ticker: documents.ticker, connections: connections,
                                        forwarding: forwarding),
            clients: ClientRoutes(clients: clients, documents: documents),
            webChannel: WebChannelRoutes(backend: backend, registry: connections, listenOptions: configuration.listen, forwarding: forwarding),
            staticFiles: StaticFiles(directory: configuration.publicDirectory ?? StaticFiles.locate(), logger: logger),
            adminToken: AdminToken(token: configuration.adminToken),
            metrics: ServerMetrics(),
            logger: logger
        )
    }

    public static func makeApplication(configuration: ServerConfiguration, backend: Backend,
                                       clients: EdgeClients? = nil) throws -> some ApplicationProtocol {
        let (responder, server) = try makeServer(configuration: configuration, backend: backend, clients: clients)
        return Application(
            responder: responder,
            server: server,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
            logger: responder.logger
        )
    }

    /// One application per address, all answering with one responder (one registry of
    /// connections, one set of metrics, one set of sockets): `firegate exec` listens on each
    /// port firebase.json names (docs/firebase-cli.md). `onRunning` hears each port once it listens.
    public static func makeApplications(configuration: ServerConfiguration, backend: Backend, clients: EdgeClients,
                                        addresses: [(host: String, port: Int)],
                                        onRunning: @escaping @Sendable (_ port: Int) async -> Void) throws -> [any Service] {
        let (responder, server) = try makeServer(configuration: configuration, backend: backend, clients: clients)
        return addresses.map { address in
            Application(
                responder: responder,
                server: server,
                configuration: .init(address: .hostname(address.host, port: address.port), serverName: serverName),
                onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? address.port) },
                logger: responder.logger
            )
        }
    }

    private static func makeServer(configuration: ServerConfiguration, backend: Backend,
                                   clients: EdgeClients?) throws -> (FiregateResponder, HTTPServerBuilder) {
        let clients = clients ?? EdgeClients(backend: backend)
        var logger = Logger(label: "firegate")
        logger.logLevel = configuration.logLevel
        let responder = makeResponder(backend: backend, clients: clients, configuration: configuration, logger: logger)
        var server = oneProtocolPerConnection(responder, fastPath: configuration.fastPath)
        if configuration.tlsCertificatePath != nil || configuration.tlsKeyPath != nil {
            server = try .tls(oneProtocolPerConnection(responder, fastPath: configuration.fastPath), tlsConfiguration: try tlsConfiguration(configuration))
        }
        return (responder, server)
    }

    /// The `Server` header.
    static let serverName = "firegate"

    /// HTTP/1.1 with bare GETs, listens and commits answered from the connection's bytes, a
    /// JSON answer to unparsable requests, and connections that end once the server has closed its
    /// side (see `ConnectionFastPath`, `UnparsableRequestAnswer`, `LingeringClose`).
    ///
    /// A connection that opens with the HTTP/2 preface is HTTP/2 instead: its gRPC calls go to
    /// Firestore's gRPC service, its other requests to the same responder (docs/architecture.md).
    static func oneProtocolPerConnection(_ responder: FiregateResponder, fastPath: Bool = true) -> HTTPServerBuilder {
        let documents = responder.documents, metrics = responder.metrics, logger = responder.logger
        let sockets = RealtimeSockets(backend: documents.backend, registry: responder.operations.connections)
        let configuration = HTTP1Channel.Configuration(additionalChannelHandlers: [LingeringClose(), UnparsableRequestAnswer()])
        let grpc = FirestoreGRPCService(backend: documents.backend, listenOptions: documents.listenOptions,
                                        connections: GRPCConnections(registry: responder.operations.connections, metrics: metrics),
                                        forwarding: documents.forwarding)
        return HTTPServerBuilder { handler in
            let connections = OpenConnections()
            let install = FastPathHTTP1Channel.installer(HTTP1Channel(responder: handler, configuration: configuration), connections: connections, logger: logger)
            let http1 = FastPathHTTP1Channel(services: FastPathServices(documents: documents, metrics: metrics, logger: logger, sockets: sockets,
                                                                        enabled: fastPath, webChannel: responder.webChannel, installFullPath: install))
            let streams = HTTP1Channel(responder: { request, writer, channel in
                if FirestoreGRPCService.isGRPC(request) {
                    try await grpc.respond(to: request, writer: writer, channel: channel)
                } else {
                    try await handler(request, writer, channel)
                }
            })
            return ProtocolSniffingChannel(http1: http1, http2: HTTP2Connection(streams: streams, grpc: grpc), sockets: sockets,
                                           connections: connections)
        }
    }

    static func tlsConfiguration(_ configuration: ServerConfiguration) throws -> TLSConfiguration {
        guard let certificatePath = configuration.tlsCertificatePath, let keyPath = configuration.tlsKeyPath else {
            throw FiregateError.invalidArgument("TLS needs both --tls-cert and --tls-key.")
        }
        let chain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { NIOSSLCertificateSource.certificate($0) }
        let key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        var tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(key))
        // ALPN: gRPC clients ask for h2, everything else for HTTP/1.1; the connection's first bytes decide.
        tls.applicationProtocols = ["h2", "http/1.1"]
        return tls
    }
}
