import FiregateBackend
import FiregateModel
import FiregateStore
import HTTPTypes
import NIOCore

/// The fast path's document answers: a GET from the cached encoding, a commit that applies, a
/// listen as a stream on the event loop.
extension ConnectionFastPath {
    /// A document listen, resuming after its `Last-Event-ID` as the full path does.
    func documentListen(_ target: DocumentRequestPath, _ request: SimpleRequest) -> DocumentListenStream {
        let database = backend.documents.database(target.database)
        var stream = DocumentListenStream(database: database, path: target.path, options: documents.listenOptions, ticker: documents.ticker,
                                          frames: documents.frames, resumeAfter: request.lastEventID.flatMap { database.sequence(fromResumeToken: $0) },
                                          resuming: request.resumes)
        stream.access = ListenAccess(rules: backend.rules, caller: RulesCaller(identity: rules.identity(request.authorization), surface: "sse"))
        return stream
    }

    /// A document's cached encoding (or the 404 error body); nil when the full path must answer
    /// (a large body to gzip).
    func documentAnswer(_ target: DocumentRequestPath, _ request: SimpleRequest) -> Answer? {
        let database = backend.documents.database(target.database)
        if let verdict = rules.judge(target.database, authorization: request.authorization) {
            let answer = rules.get(database, target.path, verdict)
            return request.acceptsGzip && answer.body.count >= FiregateResponder.gzipThreshold ? nil : answer
        }
        guard let bytes = database.encodedDocument(target.path) else {
            let error = DocumentRoutes.notFound(target.database, target.path)
            return Answer(status: .notFound, body: JSONWriter.bytes(JSON.errorBody(error)), surface: .documents)
        }
        if request.acceptsGzip, bytes.count >= FiregateResponder.gzipThreshold { return nil }
        return Answer(status: .ok, body: bytes, surface: .documents)
    }

    /// A commit without a transaction whose writes apply: applied now, in commit order; nil when
    /// the full path must answer (one it refuses, which it then refuses with its own error; a
    /// refused commit changed nothing).
    func documentCommit(_ target: DocumentRequestPath, _ request: SimpleRequest, body: ByteBuffer?) -> FastPathRules.CommitStart? {
        guard let body, let json = try? JSONParser.parse(Array(body.readableBytesView)), case .object = json else { return nil }
        if let transaction = json.member("transaction"), transaction != .null { return nil }
        // On replicas, a commit this replica may not own takes the full path, which forwards it.
        if let replicas = backend.replicas,
           !replicas.holdsLease(of: .documents(project: target.database.project, database: target.database.database)) { return nil }
        let database = backend.documents.database(target.database)
        guard let writes = try? DocumentCalls.parseWrites(json, database) else { return nil }
        if let verdict = rules.judge(target.database, authorization: request.authorization) { return rules.commit(writes, database, verdict) }
        return (try? database.beginCommit(writes)).map { .pending($0, decision: nil) }
    }

    /// Input waits while the commit becomes durable; then its answer goes out, as the full
    /// path's would.
    func awaitDurable(_ commit: DocumentDatabase.PendingCommit, decision: String?, gzipAccepted: Bool, path: String,
                      started: ContinuousClock.Instant, context: ChannelHandlerContext) {
        machine.answerStarted()
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        // The callback runs on the storage's writer thread, which every commit waits for:
        // the answer is encoded on the loop.
        commit.whenDurable { outcome in
            loop.execute {
                var answer: Answer
                switch outcome {
                case .success(let result):
                    answer = Answer(status: .ok, body: JSONWriter.bytes(result.restJSON), surface: .documents, method: "POST", decision: decision)
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
}
