import FiregateBackend
import FiregateModel
import NIOCore

/// What each `FastRoute` gets: an answer written now, one prepared off the event loop while
/// input waits, or a stream the connection serves from now on.
extension ConnectionFastPath {
    /// Serves the request at the front of `buffer` by its route; false when the full path must
    /// (the request then stays where it is).
    func serve(_ route: FastRoute, _ request: SimpleRequest, in buffer: inout ByteBuffer, path: String,
               started: ContinuousClock.Instant, context: ChannelHandlerContext) -> Bool {
        switch route {
        case .commit(let target):
            let body = buffer.getSlice(at: buffer.readerIndex + request.body.lowerBound, length: request.body.count)
            guard let start = documentCommit(target, request, body: body) else { return false }
            buffer.moveReaderIndex(forwardBy: request.length)
            unread = buffer
            switch start {
            case .pending(let commit, let decision):
                awaitDurable(commit, decision: decision, gzipAccepted: request.acceptsGzip, path: path, started: started, context: context)
            case .answered(let answer):
                respond(answer, path: path, started: started, context: context)
            }
        case .documentStream(let target):
            // A token from ahead (another replica's) waits for this one on the full path.
            if let token = request.lastEventID, let database = Optional(backend.documents.database(target.database)),
               let sequence = database.sequence(fromResumeToken: token), sequence > database.currentSequence { return false }
            buffer.moveReaderIndex(forwardBy: request.length)
            // An idle stream keeps no read buffer.
            unread = buffer.readableBytes > 0 ? buffer : nil
            listen(DocumentListenSource(documentListen(target, request)), path: path, started: started, context: context)
        case .treeStream(let namespace, let location):
            // The request stays at the front of the input until the subscription exists.
            subscribeTree(namespace, location, identity: rules.identity(request.authorization), length: request.length, path: path,
                          started: started, context: context)
        case .documentGet(let target):
            guard let answer = documentAnswer(target, request) else { return false }
            buffer.moveReaderIndex(forwardBy: request.length)
            unread = buffer
            respond(answer, path: path, started: started, context: context)
        case .treeRead(let namespace, let location):
            buffer.moveReaderIndex(forwardBy: request.length)
            unread = buffer
            if let cached = backend.tree.cachedEncoding(namespace: namespace, path: location),
               !(request.acceptsGzip && cached.count >= FiregateResponder.gzipThreshold) {
                respond(Answer(status: .ok, body: cached, surface: .tree), path: path, started: started, context: context)
            } else {
                readTree(namespace, location, gzipAccepted: request.acceptsGzip, path: path, started: started, context: context)
            }
        case .webChannelBackChannel(let id, let acknowledged):
            // An unknown or ended session gets the full path's answers.
            guard let webChannel = services.webChannel, let stream = webChannel.sessions.stream(id), stream.session.ending == nil else { return false }
            buffer.moveReaderIndex(forwardBy: request.length)
            unread = buffer.readableBytes > 0 ? buffer : nil
            let source = WebChannelBackChannelSource(stream, acknowledged: acknowledged, origin: request.origin, replica: services.replicaID,
                                                     registry: webChannel.registry,
                                                     ticker: webChannel.ticker, chunks: webChannel.chunks, loop: context.eventLoop)
            listen(source, path: path, started: started, context: context)
        case .fullPath:
            return false
        }
        return true
    }

    /// The connection serves `source` from now on; its input waits until the stream ends.
    func listen(_ source: any EventLoopStreamSource, path: String, started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        let listening = EventLoopStream(source, owner: self, metrics: metrics, wakeQueue: services.wakeQueues.queue(for: context.eventLoop),
                                        replica: services.replicaID)
        self.listening = listening
        machine.streamStarted()
        // What the connection remembers of its requests is of no use while it streams.
        router.forget()
        listening.start(context: context)
        logFinished(surface: source.surface, method: "GET", status: 200, path: path, started: started)
    }

    /// The stream ended on its own (a reset): the connection serves requests again.
    func streamEnded(context: ChannelHandlerContext) {
        listening = nil
        machine.streamEnded()
        process(context: context, inRead: false)
        flushIfNeeded(context: context)
    }

    /// Runs `work` off the event loop while input waits (reading paused), then `finish` on it.
    func whileInputWaits<Result: Sendable>(_ context: ChannelHandlerContext, _ work: @escaping @Sendable () async -> Result,
                                           then finish: @escaping (ConnectionFastPath, ChannelHandlerContext, Result) -> Void) {
        machine.answerStarted()
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

    /// An answer prepared off the loop goes out; then the input that came meanwhile.
    func finishAnswering(_ answer: Answer, gzipped: Bool, path: String, started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        machine.answerReady()
        guard context.channel.isActive else { return }
        respond(answer, path: path, started: started, gzipped: gzipped, context: context)
        answered(context: context, goOn: true)
    }

    /// An answer prepared off the loop is out (or is a stream now): the connection goes on with
    /// its input, then with a half-close or a shutdown that came meanwhile.
    func answered(context: ChannelHandlerContext, goOn: Bool) {
        if goOn {
            flushIfNeeded(context: context)
            process(context: context, inRead: false)
            flushIfNeeded(context: context)
        }
        let (closed, resume) = machine.afterAnswer()
        if let closed {
            if closed == .handOver, handOver(context: context, evenIfEmpty: true) { context.fireChannelReadComplete() }
            inputClosed(closed == .handOver ? .forward : closed, context: context)
        }
        if resume { context.read() }
        quiesce(machine.closeIfQuiesced(), context: context)
    }

    // MARK: Writing

    func respond(_ answer: Answer, path: String, started: ContinuousClock.Instant, gzipped: Bool = false, context: ChannelHandlerContext) {
        let second = HTTPDate.currentSecond()
        if date.second != second { date = (second, HTTPDate.format(second)) }
        context.write(wrapOutboundOut(answer.encoded(gzipped: gzipped, date: date.text, replica: services.replicaID, allocator: context.channel.allocator)), promise: nil)
        needsFlush = true
        logFinished(surface: answer.surface, method: answer.method, status: answer.status.code, path: path, started: started)
    }

    func logFinished(surface: Surface, method: String, status: Int, path: String, started: ContinuousClock.Instant) {
        let duration = ContinuousClock.now - started
        metrics.requestFinished(surface: surface, method: method, status: status, duration: duration)
        if services.logger.logLevel <= .debug {
            FiregateResponder.logRequest(services.logger, method: method, path: path, status: status, duration: duration, surface: surface)
        }
    }
}
