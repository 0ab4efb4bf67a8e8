import FiregateBackend
import FiregateModel
import FiregateWebChannel
import HTTPTypes
import Hummingbird
import NIOCore

/// The Firestore web SDK's streams: WebChannel (wire version 8) at
/// `/google.firestore.v1.Firestore/{Listen,Write}/channel` (docs/webchannel.md). Each session
/// is one Listen or Write stream, served by the engines gRPC uses, and one entry of the
/// connections registry (protocol `firestore-webchannel`), so a network switch takes one
/// page's Firestore offline as it takes a gRPC caller's.
struct WebChannelRoutes: Sendable {
    static let pathPrefix = "/google.firestore.v1.Firestore/"

    let backend: Backend
    let registry: ConnectionRegistry
    let listenOptions: ListenOptions
    let forwarding: OwnerForwarding?
    let sessions = WebChannelDirectory()
    let texts = WebChannelTextCache()
    let fanOut = WebChannelFanOut()
    let chunks = WebChannelChunkCache()

    /// How often an idle back channel gets a `noop`, and what the handshake tells the client
    /// (it gives up on a silent back channel after 1.5 × the interval it was told).
    static let keepAlive: Duration = .seconds(20)
    static let announcedKeepAliveMilliseconds = 30_000
    /// Wakes back channels served on an event loop to look whether they owe a keep-alive: a
    /// quarter of `keepAlive`, so none is quiet for much longer than it (whatever the SSE
    /// streams' interval is set to).
    let ticker = KeepAliveTicker(seconds: 5)

    func respond(to request: Request, context: some RequestContext) async -> Response {
        do {
            let kind = try WebChannelRoutes.kind(request.uri.path)
            let query = try WebChannelRequest.query(Substring(request.uri.query ?? ""))
            switch try WebChannelRequest.classify(method: request.method.rawValue, query: query) {
            case .handshake: return try await handshake(kind, request, query: query)
            case .forward(let id, let acknowledged): return try await forward(id, acknowledged: acknowledged, request)
            case .backChannel(let id, let acknowledged, let longPoll, let timeout):
                return backChannel(id, acknowledged: acknowledged, longPoll: longPoll, timeoutMilliseconds: timeout)
            case .terminate(let id):
                sessions.terminate(id)
                return WebChannelRoutes.text("")
            }
        } catch {
            return ErrorResponse.firestore(ErrorResponse.normalize(error))
        }
    }

    static func kind(_ path: String) throws(FiregateError) -> WebChannelStream.Kind {
        switch path.dropFirst(pathPrefix.count) {
        case "Listen/channel": .listen
        case "Write/channel": .write
        default: throw FiregateError(.notFound, "No WebChannel stream at \(path): Firestore's are \(pathPrefix)Listen/channel and \(pathPrefix)Write/channel.")
        }
    }

    // MARK: Requests

    /// Opens a session: the stream's headers (credential, app id) come in the body, with the
    /// first messages; the answer is array 0, `c`, and ends.
    private func handshake(_ kind: WebChannelStream.Kind, _ request: Request, query: [String: String]) async throws -> Response {
        guard let name = query["database"] else {
            throw FiregateError.invalidArgument("A WebChannel handshake names its database: database=projects/{project}/databases/{database}.")
        }
        let database = try FirestoreResourceName.database(name)
        var form = try WebChannelForm.parse(try await WebChannelRoutes.body(request))
        if form.headers.isEmpty, let legacy = query["$httpHeaders"] { form.headers = WebChannelForm.headerLines(legacy) }
        let authorization = form.header("Authorization")
        let caller = Result { () throws(FiregateError) -> RulesCaller? in
            try backend.rules.caller(token: CallIdentity.bearerToken(authorization), judged: backend.rules.isActive, surface: "webchannel")
        }
        let session = WebChannelSession(id: WebChannelDirectory.sessionID())
        let info = ConnectionInfo(protocol: "firestore-webchannel", appId: form.header("X-Firebase-GMPID").flatMap { $0.isEmpty ? nil : $0 },
                                  userAgent: form.header("X-Goog-Api-Client") ?? request.headers[.userAgent], peer: nil,
                                  project: database.project, database: database.database, namespace: nil,
                                  uid: backend.rules.admin.identity(authorization: authorization).uid)
        let sessions = self.sessions
        guard let entryID = registry.open(info, drop: { error in
            guard let stream = sessions.stream(session.id) else { return }
            session.end(.finished, last: WebChannelFraming.stop)
            stream.end(error)
        }) else {
            throw FiregateError.unavailable("The network is offline for \(database.name) (a Firegate network switch).")
        }
        let stream = WebChannelStream(kind: kind, session: session, database: database, entryID: entryID, registry: registry, backend: backend,
                                      listenOptions: listenOptions, forwarding: forwarding, caller: caller, texts: texts,
                                      fanOut: fanOut)
        guard sessions.add(stream) else {
            stream.end(.resourceExhausted("Too many WebChannel sessions are open (\(WebChannelDirectory.limit))."))
            throw FiregateError.resourceExhausted("Too many WebChannel sessions are open (\(WebChannelDirectory.limit)); terminate unused channels.")
        }
        await pace(entryID)
        try await deliver(form, to: stream)
        return WebChannelRoutes.text(WebChannelFraming.handshake(sessionID: session.id, keepAliveMilliseconds: WebChannelRoutes.announcedKeepAliveMilliseconds))
    }

    /// Messages for an open session; answered at once (results go on the back channel).
    private func forward(_ id: String, acknowledged: Int, _ request: Request) async throws -> Response {
        guard let stream = sessions.stream(id), stream.session.ending == nil else { return WebChannelRoutes.unknownSession(id) }
        stream.session.acknowledge(through: acknowledged)
        let form = try WebChannelForm.parse(try await WebChannelRoutes.body(request))
        if let entryID = stream.entryID { await pace(entryID) }
        try await deliver(form, to: stream)
        let answer = stream.session.forwardAnswer
        return WebChannelRoutes.text(WebChannelFraming.forwardAnswer(backChannelOpen: answer.backChannelOpen, lastArrayID: answer.lastArrayID,
                                                                      outstanding: answer.outstanding))
    }

    private func deliver(_ form: WebChannelForm, to stream: WebChannelStream) async throws {
        let ready: [String]
        do {
            ready = try stream.session.receive(offset: form.offset, messages: form.messages)
        } catch {
            throw FiregateError.invalidArgument("Map \(error.offset) is too far ahead: the session expects map \(error.expected) next.")
        }
        await stream.deliver(ready)
    }

    private func backChannel(_ id: String, acknowledged: Int, longPoll: Bool, timeoutMilliseconds: Int?) -> Response {
        guard let stream = sessions.stream(id), stream.session.ending != .closed else { return WebChannelRoutes.unknownSession(id) }
        // An ended stream's session lives on only for its last arrays (an error, a `stop`).
        if stream.session.ending == .finished, !stream.session.hasArrays(after: acknowledged) { return WebChannelRoutes.unknownSession(id) }
        let channel = stream.session.openBackChannel(acknowledging: acknowledged)
        let wait: Duration = longPoll ? .milliseconds(min(max(timeoutMilliseconds ?? 30_000, 5_000), 30_000)) : WebChannelRoutes.keepAlive
        let writer = WebChannelBackChannelWriter(channel: channel, stream: stream, longPoll: longPoll, wait: wait, registry: registry, entryID: stream.entryID)
        // Not `InboundClose.cancelling`: it reads the connection while the answer is written,
        // so the page's next request on the same keep-alive connection (a long poll's next
        // poll, a stream's after it recycles) was taken for a hang-up or lost, and the page
        // waited 45 s. A back channel whose page left ends at its next write instead: a
        // keep-alive, or the long poll's limit (docs/webchannel.md, "The back channel").
        return Response(status: .ok, headers: WebChannelRoutes.headers, body: ResponseBody { body in
            await writer.run(&body)
        })
    }

    private func pace(_ entryID: String) async {
        let delay = registry.latency(entryID)
        if delay > .zero { try? await Task.sleep(for: delay) }
    }

    // MARK: Answers

    static let headers: HTTPFields = [
        .contentType: "text/plain; charset=utf-8",
        .cacheControl: "no-cache, no-store, max-age=0, must-revalidate",
        HTTPField.Name("X-Content-Type-Options")!: "nosniff",
    ]

    static func text(_ body: String) -> Response {
        Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    /// 400 with "Unknown SID" in the body past its first character: the client's test for a
    /// session the server forgot, which fails the channel at once instead of retrying.
    static func unknownSession(_ id: String) -> Response {
        ErrorResponse.firestore(.invalidArgument("Unknown SID \(id): the session ended or expired; open a new channel."))
    }

    static func body(_ request: Request) async throws(FiregateError) -> String {
        String(decoding: try await request.bodyBytes(), as: UTF8.self)
    }
}
