import FiregateBackend
import FiregateModel
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1

/// The requests that make up most of a server's traffic, answered straight from the
/// connection's bytes (see `SimpleRequest`): no HTTP/1.1 parser, no task, no router, no header
/// fields to build — the per-request work of a static file server (DESIGN §3's targets).
/// - Bare GETs of a document (`/v1/…/documents/{path}`, no query) or of a tree location
///   (`/{path}.json`, no query but `ns=`), from the cached encodings. A missing document gets
///   the full path's 404; a tree location not in the cache is read from its namespace while
///   later input waits.
/// - A bare document `:listen` (no query; resumed with `Last-Event-ID` or not) and a bare tree event stream
///   (`Accept: text/event-stream`, no query but `ns=`): an `EventLoopStream`; what the client
///   sends meanwhile waits until the stream ends.
/// - A `:commit` without a transaction whose writes apply: later input waits until it is
///   durable. One the database refuses goes the full way, which refuses it with its error.
/// The answer is the one the full path gives: status, headers, body, metrics and the `info`
/// log line.
///
/// It sits in front of the HTTP/1.1 decoder. The first request on a connection it does not
/// take (another route or parameter, a document body to gzip, a header it does not take) hands
/// that request and everything after it to the full path for the rest of the connection:
/// request order is kept because nothing is answered here after that.
final class ConnectionFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let backend: Backend
    private let rules: FastPathRules
    private let documents: DocumentRoutes
    private let metrics: ServerMetrics
    private let logger: Logger
    /// Takes `GET /.ws` upgrades: the connection becomes a Realtime Database socket.
    private let sockets: RealtimeSockets?
    /// Starts the connection's full path, the first time input goes there (or it ends).
    private let fullPath: FullPathStart
    /// Once set, every byte goes to the full HTTP/1.1 path.
    private var passThrough = false
    /// Input not handled yet: a head still arriving, or requests behind one being answered.
    private var unread: ByteBuffer?
    /// An answer is being prepared off the event loop; input waits and reading pauses.
    private var answering = false
    private var readPaused = false
    private var inputClosedPending = false
    /// A graceful shutdown came while an answer was under way.
    private var quiescing = false
    private var needsFlush = false
    /// The last targets parsed on this connection (pollers repeat theirs).
    private var lastDocument: (raw: String, parsed: DocumentRequestPath)?
    private var lastTree: (raw: String, query: String?, namespace: String, path: TreePath)?
    private var date = (second: -1, text: "")
    /// The stream this connection serves, while it lasts.
    private var listening: EventLoopStream?

    /// Off (`ServerConfiguration.fastPath`), every request takes the full path; sockets still upgrade here.
    private let enabled: Bool

    init(documents: DocumentRoutes, metrics: ServerMetrics, logger: Logger, fullPath: FullPathStart, sockets: RealtimeSockets? = nil, enabled: Bool = true) {
        (self.fullPath, self.sockets, self.documents, self.backend) = (fullPath, sockets, documents, documents.backend)
        (rules, self.metrics, self.logger, self.enabled) = (FastPathRules(rules: documents.backend.rules), metrics, logger, enabled)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !passThrough else {
            context.fireChannelRead(data)
            return
        }
        var buffer = unwrapInboundIn(data)
        if var earlier = unread {
            earlier.writeBuffer(&buffer)
            buffer = earlier
        }
        unread = buffer
        if listening != nil {
            // Nothing is answered behind a stream; a client that keeps sending is cut off.
            if buffer.readableBytes > SimpleRequest.maxHeadLength { context.close(promise: nil) }
            return
        }
        if !answering { process(context: context, inRead: true) }
    }

    /// Answers the complete requests at the front of `unread`, in order. Outside a read
    /// (after an answer prepared off the loop) what goes on to the full path is followed by a
    /// read-complete, which is when the layers behind take it up.
    private func process(context: ChannelHandlerContext, inRead: Bool) {
        while var buffer = unread, buffer.readableBytes > 0, !answering, listening == nil {
            let started = ContinuousClock.now
            if let sockets {
                switch RealtimeUpgradeRequest.parse(buffer) {
                case .incomplete: return
                case .other: break
                case .request(let upgrade):
                    // Everything after the head is the socket's: WebSocket frames.
                    buffer.moveReaderIndex(forwardBy: upgrade.length)
                    unread = nil
                    passThrough = true
                    sockets.accept(upgrade, context: context)
                    if buffer.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(buffer)) }
                    return
                }
            }
            guard enabled else { break }
            let parse = SimpleRequest.parse(buffer)
            if case .incomplete = parse { return }
            guard case .simple(let request) = parse else { break }
            // While rules are loaded, streams and tree reads take the full path; document GETs
            // and commits are judged here (FastPathRules).
            let judging = backend.rules.isActive
            let target = String(decoding: buffer.getBytes(at: buffer.readerIndex + request.path.lowerBound, length: request.path.count) ?? [],
                                as: UTF8.self)
            let query = request.query.flatMap { buffer.getString(at: buffer.readerIndex + $0.lowerBound, length: $0.count) }
            if request.method == .post {
                guard let start = documentCommit(target, query: query, request, body: buffer.getSlice(at: buffer.readerIndex + request.body.lowerBound,
                                                                                                   length: request.body.count)) else { break }
                buffer.moveReaderIndex(forwardBy: request.length)
                unread = buffer
                switch start {
                case .pending(let commit, let decision):
                    awaitDurable(commit, decision: decision, gzipAccepted: request.acceptsGzip, path: target, started: started, context: context)
                case .answered(let answer):
                    respond(answer, path: target, started: started, context: context)
                }
            } else if !judging, let stream = documentListen(target, query: query, request) {
                buffer.moveReaderIndex(forwardBy: request.length)
                // An idle stream keeps no read buffer.
                unread = buffer.readableBytes > 0 ? buffer : nil
                listen(DocumentListenSource(stream), path: target, started: started, context: context)
                return
            } else if !judging, request.acceptsEventStream, let location = treeLocation(target, query: query) {
                // The request stays at the front of the input until the subscription exists.
                subscribeTree(location, identity: rules.identity(request.authorization), length: request.length, path: target, started: started, context: context)
                return
            } else if let answer = documentAnswer(target, query: query, request) {
                buffer.moveReaderIndex(forwardBy: request.length)
                unread = buffer
                respond(answer, path: target, started: started, context: context)
            } else if !judging, !request.acceptsEventStream, let location = treeLocation(target, query: query) {
                buffer.moveReaderIndex(forwardBy: request.length)
                unread = buffer
                if let cached = backend.tree.cachedEncoding(namespace: location.namespace, path: location.path), !(request.acceptsGzip && cached.count >= FiregateResponder.gzipThreshold) {
                    respond(Answer(status: .ok, body: cached, surface: .tree), path: target, started: started, context: context)
                } else {
                    readTree(location, gzipAccepted: request.acceptsGzip, path: target, started: started, context: context)
                }
            } else {
                break
            }
        }
        guard let rest = unread, rest.readableBytes > 0, !answering else {
            if unread?.readableBytes == 0 { unread = nil }
            return
        }
        unread = nil
        passThrough = true
        fullPath.begin()
        context.fireChannelRead(wrapInboundOut(rest))
        if !inRead { context.fireChannelReadComplete() }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context: context)
        context.fireChannelReadComplete()
    }

    private func flushIfNeeded(context: ChannelHandlerContext) {
        guard needsFlush else { return }
        needsFlush = false
        context.flush()
    }

    /// While an answer is prepared, reading goes on only until some input waits: then the rest
    /// stays in the kernel, bounded. (Stopping at once would switch the socket's read interest
    /// off and on again for every commit, two system calls each, though a client rarely sends
    /// anything before its answer.)
    func read(context: ChannelHandlerContext) {
        if answering, let unread, unread.readableBytes > 0 {
            readPaused = true
        } else {
            context.read()
        }
    }

    /// The connection's input ended with a head still arriving: the full parser reports it.
    func channelInactive(context: ChannelHandlerContext) {
        listening?.abandon()
        listening = nil
        handOverUnread(context: context)
        context.fireChannelInactive()
    }

    /// The client half-closed: what it sent before still gets its answers, so the full path
    /// hears of it only after the answer under way (if any).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let listening {
            // A client that half-closes has hung up; a server shutting down says so first.
            if case ChannelEvent.inputClosed = event {
                listening.end(context: context)
                context.close(promise: nil)
                return
            }
            if event is ChannelShouldQuiesceEvent {
                listening.shutDown(context: context)
                context.close(promise: nil)
                return
            }
        }
        // Until the full path is installed, a shutdown is this handler's to carry out: an
        // idle connection closes now, one being answered once its answer is out.
        if event is ChannelShouldQuiesceEvent, !passThrough {
            quiescing = true
            closeIfQuiesced(context: context)
            return
        }
        if case ChannelEvent.inputClosed = event, !passThrough {
            if answering {
                inputClosedPending = true
                return
            }
            handOverUnread(context: context)
            fullPath.begin()
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func closeIfQuiesced(context: ChannelHandlerContext) {
        guard quiescing, !answering, listening == nil else { return }
        quiescing = false
        if passThrough {
            // Handed over meanwhile: the full path finishes what it has, then closes.
            context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        } else {
            flushIfNeeded(context: context)
            context.close(promise: nil)
        }
    }

    /// Whether there was anything to hand over.
    @discardableResult
    private func handOverUnread(context: ChannelHandlerContext) -> Bool {
        guard !passThrough, let unread, unread.readableBytes > 0 else { return false }
        self.unread = nil
        passThrough = true
        fullPath.begin()
        context.fireChannelRead(wrapInboundOut(unread))
        return true
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        listening?.writabilityChanged(context: context)
        context.fireChannelWritabilityChanged()
    }

    // MARK: Documents

    /// The parsed target, from the last one when it repeats (clients repeat theirs).
    private func documentPath(_ target: String) -> DocumentRequestPath? {
        if let lastDocument, lastDocument.raw == target { return lastDocument.parsed }
        guard let parsed = try? DocumentRequestPath.parse(target) else { return nil }
        lastDocument = (target, parsed)
        return parsed
    }

    /// A bare listen of one document, served here as a stream (resuming after its
    /// `Last-Event-ID` as the full path does); nil when the full path must.
    private func documentListen(_ target: String, query: String?, _ request: SimpleRequest) -> DocumentListenStream? {
        guard query == nil, target.hasSuffix(":listen"), backend.documents.isLoaded,
              let parsed = documentPath(target), parsed.verb == "listen", parsed.path.isDocument else { return nil }
        let database = backend.documents.database(parsed.database)
        var stream = DocumentListenStream(database: database, path: parsed.path, options: documents.listenOptions, ticker: documents.ticker,
                                          frames: documents.frames, resumeAfter: request.lastEventID.flatMap { database.sequence(fromResumeToken: $0) },
                                          resuming: request.resumes)
        stream.access = ListenAccess(rules: backend.rules, caller: RulesCaller(identity: rules.identity(request.authorization), surface: "sse"))
        return stream
    }

    private func listen(_ source: any EventLoopStreamSource, path: String, started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        let listening = EventLoopStream(source, metrics: metrics)
        self.listening = listening
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        listening.onEnd = {
            let (handler, context) = bound.value
            handler.streamEnded(context: context)
        }
        listening.start(context: context)
        let duration = ContinuousClock.now - started
        metrics.requestFinished(surface: source.surface, method: "GET", status: 200, duration: duration)
        if logger.logLevel <= .debug {
            FiregateResponder.logRequest(logger, method: "GET", path: path, status: 200, duration: duration, surface: source.surface)
        }
    }

    /// The stream ended on its own (a reset): the connection serves requests again.
    private func streamEnded(context: ChannelHandlerContext) {
        listening = nil
        process(context: context, inRead: false)
        flushIfNeeded(context: context)
    }

    /// A document's cached encoding (or the 404 error body), nil when the full path must answer.
    private func documentAnswer(_ target: String, query: String?, _ request: SimpleRequest) -> Answer? {
        // While the start's load runs, the full path waits for it (off the event loop).
        guard query == nil, !request.acceptsEventStream, target.hasPrefix("/v1/"), backend.documents.isLoaded else { return nil }
        guard let document = documentPath(target), document.verb == nil, document.path.isDocument else { return nil }
        if let verdict = rules.judge(document.database, authorization: request.authorization) {
            let answer = rules.get(backend.documents.database(document.database), document.path, verdict)
            return request.acceptsGzip && answer.body.count >= FiregateResponder.gzipThreshold ? nil : answer
        }
        guard let bytes = backend.documents.database(document.database).encodedDocument(document.path) else {
            let error = DocumentRoutes.notFound(document.database, document.path)
            return Answer(status: .notFound, body: JSONWriter.bytes(JSON.errorBody(error)), surface: .documents)
        }
        if request.acceptsGzip, bytes.count >= FiregateResponder.gzipThreshold { return nil }
        return Answer(status: .ok, body: bytes, surface: .documents)
    }

    /// A `:commit` without a transaction whose writes apply: applied now, in commit order;
    /// nil when the full path must answer (any other request, or one it refuses, which it
    /// then refuses with its own error; a refused commit changed nothing).
    private func documentCommit(_ target: String, query: String?, _ request: SimpleRequest, body: ByteBuffer?) -> FastPathRules.CommitStart? {
        guard query == nil, target.hasSuffix(":commit"), backend.documents.isLoaded, let body,
              let parsed = documentPath(target), parsed.verb == "commit", parsed.path.isEmpty,
              let json = try? JSONParser.parse(Array(body.readableBytesView)), case .object = json else { return nil }
        if let transaction = json.member("transaction"), transaction != .null { return nil }
        let database = backend.documents.database(parsed.database)
        guard let writes = try? DocumentCalls.parseWrites(json, database) else { return nil }
        if let verdict = rules.judge(parsed.database, authorization: request.authorization) { return rules.commit(writes, database, verdict) }
        return (try? database.beginCommit(writes)).map { .pending($0, decision: nil) }
    }

    /// Input waits while the commit becomes durable; then its answer goes out, as the full
    /// path's would.
    private func awaitDurable(_ commit: DocumentDatabase.PendingCommit, decision: String?, gzipAccepted: Bool, path: String,
                              started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        answering = true
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        // The callback runs on the storage's writer thread, which every commit waits for:
        // the answer is encoded on the loop.
        commit.whenDurable { outcome in
            loop.execute {
                var answer: Answer
                switch outcome {
                case .success(let result):
                    answer = Answer(status: .ok, body: JSONWriter.bytes(result.json), surface: .documents, method: "POST", decision: decision)
                case .failure(let error):
                    answer = Answer(status: HTTPResponse.Status(code: error.httpStatus), body: JSONWriter.bytes(JSON.errorBody(error)),
                                    surface: .documents, method: "POST", decision: decision)
                }
                let gzipped = gzipAccepted && answer.body.count >= FiregateResponder.gzipThreshold
                if gzipped { answer.body = Gzip.compress(answer.body) }
                let (handler, context) = bound.value
                handler.finishAnswering(answer, gzipped: gzipped, path: path, started: started, context: context)
            }
        }
    }

    // MARK: Tree

    /// The namespace and location of a bare tree GET, nil for anything else.
    private func treeLocation(_ target: String, query: String?) -> (namespace: String, path: TreePath)? {
        if let lastTree, lastTree.raw == target, lastTree.query == query { return (lastTree.namespace, lastTree.path) }
        guard Surface(path: target) == .tree else { return nil }
        var namespace = backend.defaultProject
        if let query {
            guard query.hasPrefix("ns="), !query.contains("&") else { return nil }
            namespace = String(query.dropFirst(3))
        }
        guard (try? TreeBackend.validateNamespace(namespace)) != nil, let path = try? TreeRequest.location(target) else { return nil }
        lastTree = (target, query, namespace, path)
        return (namespace, path)
    }

    /// A bare tree stream: subscribed off the event loop while input waits, then served here.
    /// If the namespace refuses, the request goes the full way, which answers the refusal.
    private func subscribeTree(_ location: (namespace: String, path: TreePath), identity: CallIdentity, length: Int, path: String,
                               started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        let tree = backend.tree
        whileInputWaits(context) {
            try? await tree.subscribe(namespace: location.namespace, key: TreeStreamKey(path: location.path, query: nil, format: .plain), identity: identity)
        } then: { handler, context, subscription in
            handler.treeSubscribed(subscription, length: length, path: path, started: started, context: context)
        }
    }

    /// Runs `work` off the event loop while input waits (reading paused), then `finish` on it.
    private func whileInputWaits<Result: Sendable>(_ context: ChannelHandlerContext, _ work: @escaping @Sendable () async -> Result,
                                                   then finish: @escaping (ConnectionFastPath, ChannelHandlerContext, Result) -> Void) {
        answering = true
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context, finish), eventLoop: loop)
        Task {
            let result = await work()
            loop.execute {
                let (handler, context, finish) = bound.value
                finish(handler, context, result)
            }
        }
    }

    private func treeSubscribed(_ subscription: TreeStreamSubscription?, length: Int, path: String,
                                started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        answering = false
        guard context.channel.isActive else {
            if let subscription { TreeStreamSource(subscription, tree: backend.tree).stop() }
            return
        }
        if let subscription, var buffer = unread {
            buffer.moveReaderIndex(forwardBy: length)
            unread = buffer.readableBytes > 0 ? buffer : nil
            listen(TreeStreamSource(subscription, tree: backend.tree), path: path, started: started, context: context)
        } else if handOverUnread(context: context) {
            // The full path answers it (and everything after it) from here on.
            context.fireChannelReadComplete()
        }
        if inputClosedPending {
            inputClosedPending = false
            if let listening {
                listening.end(context: context)
                context.close(promise: nil)
            } else {
                fullPath.begin()
                context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
            }
        }
        if readPaused {
            readPaused = false
            context.read()
        }
        closeIfQuiesced(context: context)
    }

    /// A location not in the cache: read it from its namespace, then answer and go on with the
    /// input that came meanwhile.
    private func readTree(_ location: (namespace: String, path: TreePath), gzipAccepted: Bool, path: String,
                          started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        let tree = backend.tree
        whileInputWaits(context) { () -> (Answer, Bool) in
            var answer: Answer
            do {
                let bytes = try await tree.readEncoded(namespace: location.namespace, path: location.path)
                answer = Answer(status: .ok, body: bytes, surface: .tree)
            } catch {
                let failure = ErrorResponse.normalize(error)
                answer = Answer(status: HTTPResponse.Status(code: failure.httpStatus),
                                body: JSONWriter.bytes(["error": .string(failure.message)], style: .pretty), surface: .tree)
            }
            // Compressed here, not on the event loop.
            let gzipped = gzipAccepted && answer.body.count >= FiregateResponder.gzipThreshold
            if gzipped { answer.body = Gzip.compress(answer.body) }
            return (answer, gzipped)
        } then: { handler, context, answered in
            handler.finishAnswering(answered.0, gzipped: answered.1, path: path, started: started, context: context)
        }
    }

    private func finishAnswering(_ answer: Answer, gzipped: Bool, path: String, started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        answering = false
        guard context.channel.isActive else { return }
        respond(answer, path: path, started: started, gzipped: gzipped, context: context)
        flushIfNeeded(context: context)
        process(context: context, inRead: false)
        flushIfNeeded(context: context)
        guard !answering else { return }
        if inputClosedPending {
            inputClosedPending = false
            if handOverUnread(context: context) { context.fireChannelReadComplete() }
            fullPath.begin()
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }
        if readPaused {
            readPaused = false
            context.read()
        }
        closeIfQuiesced(context: context)
    }

    // MARK: Writing

    private func respond(_ answer: Answer, path: String, started: ContinuousClock.Instant, gzipped: Bool = false, context: ChannelHandlerContext) {
        let second = HTTPDate.currentSecond()
        if date.second != second { date = (second, HTTPDate.format(second)) }
        context.write(wrapOutboundOut(answer.encoded(gzipped: gzipped, date: date.text, allocator: context.channel.allocator)), promise: nil)
        needsFlush = true
        let duration = ContinuousClock.now - started
        metrics.requestFinished(surface: answer.surface, method: answer.method, status: answer.status.code, duration: duration)
        if logger.logLevel <= .debug {
            FiregateResponder.logRequest(logger, method: answer.method, path: path, status: answer.status.code, duration: duration, surface: answer.surface)
        }
    }
}
