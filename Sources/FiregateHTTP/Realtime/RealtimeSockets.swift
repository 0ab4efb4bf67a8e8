import FiregateBackend
import FiregateModel
import FiregateRealtime
import Foundation
import NIOCore
import Synchronization

/// Opens Realtime Database sockets (docs/architecture.md, Real SDK connections): answers the upgrade of `GET /.ws` on the
/// fast path, registers the connection (refused while a network switch holds it offline —
/// before the hello, so the SDK backs off and stays offline), and puts the WebSocket handlers
/// and the connection's `RealtimeSession` behind the fast path.
struct RealtimeSockets: Sendable {
    let backend: Backend
    let registry: ConnectionRegistry
    /// A socket that sends nothing for this long is closed (the SDK sends a keep-alive every
    /// 45 s of silence). `FIREGATE_WS_IDLE_TIMEOUT_SECONDS` overrides it.
    let idleTimeout: TimeAmount
    let limits = RealtimeLimits()
    /// Bytes waiting to be written to a client before it counts as not reading.
    let maxBacklogBytes = 64 << 20
    /// Open sessions by the id their hello gave, for a reconnect's `ls`.
    let sessions = RealtimeSessionDirectory()

    init(backend: Backend, registry: ConnectionRegistry, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.backend = backend
        self.registry = registry
        let seconds = environment["FIREGATE_WS_IDLE_TIMEOUT_SECONDS"].flatMap(Double.init).flatMap { $0 > 0 ? $0 : nil } ?? 60
        idleTimeout = .milliseconds(Int64(seconds * 1000))
    }

    /// Answers `request` on `context` (the fast path's): a 101 and a socket, or an error and
    /// the connection closed.
    func accept(_ request: RealtimeUpgradeRequest, context: ChannelHandlerContext) {
        if let problem = request.upgradeProblem {
            return refuse(context, status: "400 Bad Request", problem)
        }
        let namespace = request.namespace(default: backend.defaultProject)
        do {
            try TreeBackend.validateNamespace(namespace)
        } catch {
            return refuse(context, status: "400 Bad Request", error.message)
        }
        let identity = backend.rules.admin.identity(authorization: request.headers["authorization"])
        let id = registry.reserveID()
        let appID = request.headers["x-firebase-gmpid"].flatMap { $0.isEmpty ? nil : $0 } ?? request.parameters["p"]
        let info = ConnectionInfo(id: id, protocol: "rtdb-websocket", appId: appID, userAgent: request.headers["user-agent"],
                                  peer: context.channel.remoteAddress.map { "\($0)" }, project: RealtimeSockets.project(of: namespace),
                                  database: nil, namespace: namespace, uid: identity.uid)
        let registry = self.registry, operations = backend.operations
        let transport = RealtimeSocketTransport(channel: context.channel, maxBacklogBytes: maxBacklogBytes) { registry.latency(id) }
        var hooks = RealtimeSessionHooks()
        hooks.listensChanged = { registry.setListens(id, $0) }
        hooks.identityChanged = { registry.setUID(id, $0.uid) }
        hooks.onDisconnectRan = { operations.record(.onDisconnect(client: id, path: $0.path.description, op: $0.name)) }
        hooks.timeline = backend.timelines.recorder(TimelineLane.connectionID(id))
        if let replicas = backend.replicas {
            hooks.onDisconnectChanged = { registered in
                replicas.keepOnDisconnect(connection: id, namespace: namespace,
                                          operations: registered.isEmpty ? nil : JSONWriter.bytes(.array(registered.map(\.json))))
            }
        }
        let session = RealtimeSession(tree: backend.tree, namespace: namespace, identity: identity, transport: transport, hooks: hooks, limits: limits,
                                      rules: backend.rules)
        let controls = ConnectionControls(
            drop: { error in transport.close(code: WebSocketFrameReader.Code.goingAway, reason: error.message) },
            revokeAuth: { status, reason in session.revokeAuth(status: status, reason: reason) },
            reset: {
                session.forgetOnDisconnect()
                transport.close(code: WebSocketFrameReader.Code.goingAway, reason: "The emulator was reset.")
            })
        guard registry.open(info, controls: controls) != nil else {
            return refuse(context, status: "503 Service Unavailable", "This connection is offline: a Firegate network switch refuses it (PUT /emulator/v1/connections/network).")
        }
        let accept = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(request.acceptValue)\r\n\r\n"
        context.write(NIOAny(context.channel.allocator.buffer(string: accept)), promise: nil)
        let sessionID = "\(id)-\(UInt32.random(in: .min ... .max))"
        let sessions = self.sessions
        let socket = RealtimeSocketHandler(session: session, transport: transport, maxMessageBytes: limits.maxMessageBytes,
                                           idleTimeout: idleTimeout) { reason in
            sessions.remove(sessionID)
            registry.close(id, reason: reason)
        }
        do {
            try context.channel.syncOptions?.setOption(ChannelOptions.recvAllocator, value: FastPathHTTP1Channel.receiveBuffers)
            try context.pipeline.syncOperations.addHandler(socket, position: .after(context.handler))
        } catch {
            registry.close(id, reason: "The socket could not be set up: \(error)")
            context.close(promise: nil)
            return
        }
        // The SDK names its last session (`ls`) so the server cleans it up: a socket the client
        // left behind ends now and its onDisconnect operations run before this one's requests.
        if let last = request.parameters["ls"], let previous = sessions.take(last), previous.namespace == namespace {
            previous.supersede(by: session)
        }
        sessions.add(sessionID, session)
        let host = request.headers["host"] ?? "localhost"
        session.start(serverMillis: backend.clock.nowMicros() / 1000, host: host, sessionID: sessionID)
        context.flush()
    }

    /// The project of a namespace named as the SDKs default it (`<project>-default-rtdb`).
    /// (else the namespace itself, as Firegate's default namespace is the default project).
    static func project(of namespace: String) -> String {
        namespace.hasSuffix("-default-rtdb") ? String(namespace.dropLast("-default-rtdb".count)) : namespace
    }

    func refuse(_ context: ChannelHandlerContext, status: String, _ message: String) {
        let body = JSONWriter.bytes(["error": .string(message)])
        let head = "HTTP/1.1 \(status)\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        var buffer = context.channel.allocator.buffer(capacity: head.utf8.count + body.count)
        buffer.writeString(head)
        buffer.writeBytes(body)
        let channel = context.channel
        context.writeAndFlush(NIOAny(buffer)).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// The open sockets' sessions by the id each hello gave (`s`), which the SDK sends back as `ls`
/// when it reconnects.
final class RealtimeSessionDirectory: Sendable {
    private let sessions = Mutex<[String: RealtimeSession]>([:])

    func add(_ id: String, _ session: RealtimeSession) {
        sessions.withLock { $0[id] = session }
    }

    func remove(_ id: String) {
        _ = sessions.withLock { $0.removeValue(forKey: id) }
    }

    func take(_ id: String) -> RealtimeSession? {
        sessions.withLock { $0.removeValue(forKey: id) }
    }
}
