import FiregateBackend
import FiregateModel
import FiregateStore
import FiregateProto
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import SwiftProtobuf

/// The event-loop path of gRPC's hot calls — GetDocument, Commit outside a transaction, and
/// Listen — between an HTTP/2 connection's `NIOHTTP2Handler` and its stream multiplexer. Such a
/// call is served from its frames: no stream channel, no task and no Hummingbird request, each of
/// which costs more than the read itself (docs/benchmarks.md, the gRPC rows; the REST fast path does the same
/// for HTTP/1.1).
///
/// A unary call's frames (and its stream's events) are held until its request has ended. Anything
/// this path does not answer — another method, a call the network switch delays or refuses, a body
/// that is not one whole uncompressed message, a body over 16 KiB, a commit in a transaction, a
/// write `Write(proto:)` refuses — goes to the multiplexer with everything held, in order, and
/// `FirestoreGRPCService` serves it as any other call, with the same errors. A Listen is taken at
/// its head when its metadata names the database and the switch lets it through undelayed
/// (`GRPCListenStream`); else it goes on at once.
final class GRPCFastPath: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    enum Method: String {
        case getDocument = "GetDocument"
        case commit = "Commit"
        case listen = "Listen"
    }

    /// What a held stream has seen, replayed in order if the call is handed over.
    private enum Held {
        case frame(HTTP2Frame)
        case event(Any)
    }

    private struct Call {
        let method: Method
        let headers: HPACKHeaders
        var held: [Held]
        var body = ByteBuffer()
        /// The request has ended and the answer is being made (a commit waits for the disk).
        var answering = false
    }

    /// Bodies larger than this are handed over: a held stream sends no window updates, so this
    /// stays well inside the stream's first window (64 KiB), or a larger body would never end.
    static let maxHeldBody = 16 * 1024

    let service: FirestoreGRPCService
    let logger: Logger
    private var calls: [HTTP2StreamID: Call] = [:]
    private var listens: [HTTP2StreamID: GRPCListenStream] = [:]
    /// This connection's scopes in the connections registry (looked up on the first call).
    private var connection: GRPCConnection?
    /// Database names this connection's calls named, parsed.
    private var databases: [String: DatabaseID] = [:]
    /// Answers are flushed together: once per read, or once per loop turn for commits that
    /// became durable together.
    private var reading = false
    private var flushPending = false

    init(service: FirestoreGRPCService, logger: Logger) {
        self.service = service
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        reading = true
        let frame = unwrapInboundIn(data)
        if let listen = listens[frame.streamID] { return received(frame, on: listen) }
        guard calls[frame.streamID] != nil else {
            if case .headers(let headers) = frame.payload, !headers.endStream, let method = GRPCFastPath.method(headers.headers) {
                if method == .listen {
                    if !startListen(frame.streamID, headers.headers, context: context) { context.fireChannelRead(data) }
                } else {
                    calls[frame.streamID] = Call(method: method, headers: headers.headers, held: [.frame(frame)])
                }
            } else {
                context.fireChannelRead(data)
            }
            return
        }
        let stream = frame.streamID
        if calls[stream]!.answering { return }  // nothing the client sends now changes the answer
        calls[stream]!.held.append(.frame(frame))
        switch frame.payload {
        case .data(let data):
            if case .byteBuffer(var bytes) = data.data { calls[stream]!.body.writeBuffer(&bytes) }
            if calls[stream]!.body.readableBytes > GRPCFastPath.maxHeldBody { return handOver(stream, context: context) }
            if data.endStream { requestEnded(stream, context: context) }
        case .headers(let trailers):
            if trailers.endStream { requestEnded(stream, context: context) } else { handOver(stream, context: context) }
        case .rstStream:
            calls[stream] = nil
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        reading = false
        if flushPending {
            flushPending = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        let stream: HTTP2StreamID?
        switch event {
        case let created as NIOHTTP2StreamCreatedEvent: stream = created.streamID
        case let updated as NIOHTTP2WindowUpdatedEvent: stream = updated.streamID
        case let closed as StreamClosedEvent:
            // The stream ended (answered, or reset by the client): its call is over.
            if calls.removeValue(forKey: closed.streamID) != nil { return }
            if let listen = listens.removeValue(forKey: closed.streamID) { return listen.closed() }
            stream = nil
        case is ChannelShouldQuiesceEvent:
            // Shutdown: Listen calls end UNAVAILABLE, so clients reconnect and resume elsewhere.
            for listen in listens.values { listen.end(.unavailable("The server is shutting down.")) }
            return
        default: stream = nil
        }
        if let stream, listens[stream] != nil { return }  // the multiplexer never saw it
        if let stream, calls[stream] != nil {
            if !calls[stream]!.answering { calls[stream]!.held.append(.event(event)) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        calls.removeAll()
        for listen in listens.values { listen.closed() }
        listens.removeAll()
        context.fireChannelInactive()
    }

    /// The method a request head names, if it is one this path may answer (one pass over the
    /// head: pseudo-headers and HPACK's names are lowercase).
    static func method(_ headers: HPACKHeaders) -> Method? {
        var post = false, grpc = false, identity = true
        var method: Method?
        for (name, value, _) in headers {
            switch name {
            case ":method": post = value == "POST"
            case ":path":
                guard value.hasPrefix(FirestoreGRPCService.pathPrefix) else { return nil }
                method = Method(rawValue: String(value.utf8.dropFirst(FirestoreGRPCService.pathPrefix.utf8.count))!)
            case "content-type": grpc = value.hasPrefix("application/grpc")
            case "grpc-encoding": identity = value == "identity"
            default: break
            }
        }
        return post && grpc && identity ? method : nil
    }

    /// The database a call's metadata names (the resource prefix is the same on every call of a
    /// client: parsed once per connection).
    private func routedScope(_ headers: HPACKHeaders) -> DatabaseID? {
        if let prefix = headers.first(name: "google-cloud-resource-prefix"), let known = databases[prefix] { return known }
        let prefix = headers.first(name: "google-cloud-resource-prefix")
        guard let scope = GRPCConnections.scope(prefix: prefix, params: headers.first(name: "x-goog-request-params")) else { return nil }
        if let prefix, scope.name == prefix { remember(prefix, scope) }
        return scope
    }

    /// Who a call on the loop comes from (its registry entry's key).
    static func caller(_ scope: DatabaseID, _ headers: HPACKHeaders) -> GRPCCaller {
        GRPCCaller(scope, appID: headers.first(name: "x-firebase-gmpid"), authorization: headers.first(name: "authorization"),
                   userAgent: headers.first(name: "user-agent"))
    }

    private func remember(_ name: String, _ database: DatabaseID) {
        if databases.count >= 16 { databases.removeAll() }
        databases[name] = database
    }

    /// Takes a Listen call at its head when it can serve it from the loop (see the type's comment).
    private func startListen(_ stream: HTTP2StreamID, _ headers: HPACKHeaders, context: ChannelHandlerContext) -> Bool {
        // Judged calls (any ruleset loaded) take the full path, where the rules are.
        guard !service.backend.rules.isActive, let scope = routedScope(headers) else { return false }
        if connection == nil { connection = service.connections.connection(ofConnection: context.channel) }
        guard let ticket = connection!.begin(GRPCFastPath.caller(scope, headers)) else { return false }
        guard ticket.latency == .zero else {
            ticket.end()
            return false
        }
        let token = CallIdentity.bearerToken(headers.first(name: "authorization"))
        let identity = (try? service.backend.rules.caller(token: token, judged: false, surface: "grpc").identity) ?? .unauthenticated
        let listen = GRPCListenStream(stream: stream, service: service, ticket: ticket, context: context,
                                      caller: RulesCaller(identity: identity, surface: "grpc")) { [unowned self] in
            self.flushSoon(context: context)
        }
        listens[stream] = listen
        listen.start()
        return true
    }

    private func received(_ frame: HTTP2Frame, on listen: GRPCListenStream) {
        switch frame.payload {
        case .data(let data):
            guard case .byteBuffer(let bytes) = data.data else { return }
            listen.received(bytes, flowControlled: bytes.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0), endStream: data.endStream)
        case .headers(let trailers) where trailers.endStream:
            listen.received(ByteBuffer(), flowControlled: 0, endStream: true)
        default:
            break  // a reset is followed by the stream's close
        }
    }

    /// Gives a held stream to the multiplexer: its frames and events, in the order they came.
    private func handOver(_ stream: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let call = calls.removeValue(forKey: stream) else { return }
        for item in call.held {
            switch item {
            case .frame(let frame): context.fireChannelRead(wrapInboundOut(frame))
            case .event(let event): context.fireUserInboundEventTriggered(event)
            }
        }
        context.fireChannelReadComplete()
    }

    private func requestEnded(_ stream: HTTP2StreamID, context: ChannelHandlerContext) {
        // Whatever this path cannot decide goes to the full path, which answers it (errors too).
        guard !service.backend.rules.isActive, var call = calls[stream], let message = GRPCFastPath.singleMessage(call.body),
              let request = FastRequest(call.method, message, databases: databases) else { return handOver(stream, context: context) }
        if case .commit(let database, let writes) = request {
            remember(database.name, database)
            // A document a transaction holds: the full path waits for the lock.
            if service.database(database).holdsLocks(on: writes) { return handOver(stream, context: context) }
            // On replicas, a commit this replica may not own takes the full path, which forwards it.
            if let replicas = service.backend.replicas,
               !replicas.holdsLease(of: .documents(project: database.project, database: database.database)) {
                return handOver(stream, context: context)
            }
        }
        let headers = call.headers
        guard let scope = routedScope(headers) ?? request.scope else {
            return handOver(stream, context: context)
        }
        if connection == nil { connection = service.connections.connection(ofConnection: context.channel) }
        // Offline: the full path waits for the network, then refuses; delayed: it paces every frame.
        let caller = GRPCFastPath.caller(scope, headers)
        guard let entryID = connection!.entry(caller), service.connections.registry.admitUndelayed(entryID, method: call.method.rawValue) else {
            return handOver(stream, context: context)
        }
        let admitted = Admitted(caller: caller, entryID: entryID)
        call.answering = true
        call.held = []
        calls[stream] = call
        let started = ContinuousClock.now
        switch request {
        case .getDocument(let request, let database, let path):
            let outcome = Result { () throws(FiregateError) in try service.getDocumentMessage(request, database: database, path: path) }
            respond(stream, call.method, outcome, admitted, started: started, context: context)
        case .commit(let database, let writes):
            // One step per commit, at its answer: this is the hot path of the server SDKs' writes.
            let timeline = service.backend.timelines.recorder(TimelineLane.connectionID(entryID))
            let writeID = FirestoreGRPCService.nextCommitID()
            let pending: DocumentDatabase.PendingCommit
            do {
                pending = try service.database(database).beginCommit(writes)
            } catch {
                timeline.writeRejected(writeID, error: error, decision: nil)
                return respond(stream, call.method, .failure(error), admitted, started: started, context: context)
            }
            let loop = context.eventLoop
            let bound = NIOLoopBound((self, context), eventLoop: loop)
            // Called on the storage's writer thread: the answer is made on the loop.
            pending.whenDurable { outcome in
                loop.execute {
                    let (handler, context) = bound.value
                    switch outcome {
                    case .success(let result): timeline.writeAcknowledged(writeID, commitTime: result.commitTime, writes: writes.count)
                    case .failure(let error): timeline.writeRejected(writeID, error: error, decision: nil)
                    }
                    let answer = outcome.flatMap { result in Result { () throws(FiregateError) in try FirestoreGRPCService.commitResponse(result) } }
                    handler.respond(stream, .commit, answer, admitted, started: started, context: context)
                }
            }
        }
    }

    /// The registry entry a call was admitted on.
    private struct Admitted {
        let caller: GRPCCaller
        let entryID: String
    }

    /// A decoded request this path answers: a GetDocument, or a Commit outside a transaction
    /// whose writes `Write(proto:)` reads (a write it refuses goes to the full path, whose errors
    /// are the REST parser's).
    private enum FastRequest {
        case getDocument(Google_Firestore_V1_GetDocumentRequest, DatabaseID, ResourcePath)
        case commit(DatabaseID, [Write])

        init?(_ method: Method, _ message: ByteBuffer, databases: [String: DatabaseID]) {
            let bytes = Array(message.readableBytesView)
            switch method {
            case .getDocument:
                guard let request = try? Google_Firestore_V1_GetDocumentRequest(serializedBytes: bytes),
                      let (database, path) = try? FirestoreResourceName.document(request.name) else { return nil }
                self = .getDocument(request, database, path)
            case .commit:
                guard let request = try? Google_Firestore_V1_CommitRequest(serializedBytes: bytes), request.transaction.isEmpty,
                      let database = databases[request.database] ?? (try? FirestoreResourceName.database(request.database)),
                      let writes = try? request.writes.map({ write throws(FiregateError) in try Write(proto: write, database: database) })
                else { return nil }
                self = .commit(database, writes)
            case .listen:
                return nil  // a stream, not a unary call (`GRPCListenStream`)
            }
        }

        /// The database named in the request, for a client that sends no routing metadata.
        var scope: DatabaseID? {
            switch self {
            case .getDocument(_, let database, _): database
            case .commit(let database, _): database
            }
        }
    }

    /// The one uncompressed message a unary request carries (framed, gRPC's 5-byte prefix), nil
    /// when the body is anything else (the full path answers that with its status).
    static func singleMessage(_ body: ByteBuffer) -> ByteBuffer? {
        guard body.readableBytes >= 5, body.getInteger(at: body.readerIndex, as: UInt8.self) == 0,
              let length = body.getInteger(at: body.readerIndex + 1, as: UInt32.self),
              Int(length) == body.readableBytes - 5 else { return nil }
        return body.getSlice(at: body.readerIndex + 5, length: Int(length))
    }

    /// Writes the answer — the head, the message, the status in the trailers — unless the client
    /// reset the stream meanwhile.
    private func respond(_ stream: HTTP2StreamID, _ method: Method, _ outcome: Result<ByteBuffer, FiregateError>, _ admitted: Admitted,
                         started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        var outcome = outcome
        if case .success = outcome, !connection!.isOpen(admitted.caller, entryID: admitted.entryID) {
            outcome = .failure(.unavailable("The network went offline for \(admitted.caller.database.name) (a Firegate network switch)."))
        }
        let status: FiregateError?
        if case .failure(let error) = outcome { status = error } else { status = nil }
        service.connections.finished(method, status: status)
        guard calls[stream] != nil, context.channel.isActive else { return }
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: service.responseHead)))), promise: nil)
        if case .success(let message) = outcome {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(message))))), promise: nil)
        }
        let trailers = status.map(GRPCFastPath.trailers) ?? GRPCFastPath.okTrailers
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: trailers, endStream: true)))), promise: nil)
        flushSoon(context: context)
        if logger.logLevel <= .debug {
            logger.debug("gRPC \(method.rawValue) \(status?.status.rawValue ?? "OK") in \(ContinuousClock.now - started)")
        }
    }

    func flushSoon(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        guard !reading else { return }  // channelReadComplete flushes
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = bound.value
            guard handler.flushPending else { return }
            handler.flushPending = false
            context.flush()
        }
    }

    static let responseHead: HPACKHeaders = [":status": "200", "content-type": "application/grpc"]
    static let okTrailers: HPACKHeaders = ["grpc-status": "0"]

    static func trailers(_ status: FiregateError) -> HPACKHeaders {
        var trailers = HPACKHeaders()
        for field in ErrorResponse.grpcTrailers(status) { trailers.add(name: field.name.rawName, value: field.value) }
        return trailers
    }
}
