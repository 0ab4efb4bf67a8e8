import FiregateBackend
import FiregateModel
import Hummingbird
import HTTPTypes

/// The Firestore REST v1 surface: `/v1/projects/{p}/databases/{d}/documents…`, dispatched by
/// method, path parity (document or collection) and `:verb`.
struct DocumentRoutes: Sendable {
    let backend: Backend
    let listenOptions: ListenOptions
    let ticker: KeepAliveTicker
    let frames = ListenFrameCache()
    /// On replicas: writes and transactions go to the database's owner.
    var forwarding: OwnerForwarding?

    init(backend: Backend, listenOptions: ListenOptions) {
        self.backend = backend
        self.listenOptions = listenOptions
        ticker = KeepAliveTicker(seconds: listenOptions.keepAliveSeconds)
    }

    func respond(to request: Request, context: BasicRequestContext) async -> Response {
        var request = request
        var judge: DocumentRulesJudge?
        var response: Response
        do {
            let target = try DocumentRequestPath.parse(request.uri.path)
            if let answer = try await forwarded(target, &request) { return answer }
            // The caller is read only when rules judge the request, or for a listen (judged again
            // if rules are loaded later).
            let rules = backend.rules
            let release = rules.isActive ? rules.firestore(project: target.database.project) : nil
            var access: ListenAccess?
            if release != nil || target.verb == "listen" {
                let caller = try rules.caller(token: CallIdentity.bearerToken(request.headers[.authorization]), judged: release != nil,
                                              surface: target.verb == "listen" ? "sse" : "rest")
                judge = release.flatMap { rules.documentJudge(target.database, caller: caller, release: $0) }
                access = ListenAccess(rules: rules, caller: caller)
            }
            response = try await dispatch(target, request, judge, access: access)
            forwarding?.mark(&response, answering: request.headers, scope: Self.scope(target))
        } catch {
            response = ErrorResponse.firestore(error)
        }
        if let judge { response.headers.rulesDecisions(judge.decisionIDs) }
        return response
    }

    /// `judge` judges the request (nil: not judged); `access` follows a listen it opens.
    func dispatch(_ target: DocumentRequestPath, _ request: Request, _ judge: DocumentRulesJudge?,
                  access: ListenAccess? = nil) async throws(FiregateError) -> Response {
        let database = backend.documents.database(target.database)
        let method = Self.effectiveMethod(request)
        switch (method, target.verb) {
        case (.get, nil) where target.path.isDocument:
            return try await getDocument(database, target.path, request, judge)
        case (.get, nil) where target.path.isCollection:
            return try listDocuments(database, target.path, request, judge)
        case (.get, "listen"), (.post, "listen"):
            return try await DocumentListenRoute(database: database, options: listenOptions, ticker: ticker, frames: frames, access: access).open(target.path, request)
        case (.post, nil) where target.path.isCollection:
            return try await createDocument(database, target.path, request, judge)
        case (.patch, nil) where target.path.isDocument:
            return try await patchDocument(database, target.path, request, judge)
        case (.delete, nil) where target.path.isDocument:
            return try await deleteDocument(database, target.path, request, judge)
        case (.post, "batchGet") where target.path.isEmpty:
            return try await batchGet(database, request, judge)
        case (.post, "beginTransaction") where target.path.isEmpty:
            return try await beginTransaction(database, request)
        case (.post, "commit") where target.path.isEmpty:
            return try await commit(database, request, judge)
        case (.post, "rollback") where target.path.isEmpty:
            return try await rollback(database, request)
        case (.post, "batchWrite") where target.path.isEmpty:
            try DocumentCalls.requireAdmin(backend.rules.admin.identity(authorization: request.headers[.authorization]))
            return try await batchWrite(database, request, judge)
        case (.post, "runQuery") where !target.path.isCollection:
            return try await runQuery(database, target.path, request, judge)
        case (.post, "runAggregationQuery") where !target.path.isCollection:
            return try await runAggregationQuery(database, target.path, request, judge)
        case (.post, "listCollectionIds") where !target.path.isCollection:
            return try await listCollectionIDs(database, target.path, request, judge)
        case (_, let verb?) where ["partitionQuery", "write", "listDocuments"].contains(verb):
            throw FiregateError(.unimplemented, "\(verb) is not supported over REST by Firegate.")
        default:
            throw FiregateError(.notFound, "No route for \(request.method) \(request.uri.path)")
        }
    }

    /// The method, honouring `X-HTTP-Method-Override` on POST.
    static func effectiveMethod(_ request: Request) -> HTTPRequest.Method {
        if request.method == .post, let override = request.headers[HTTPField.Name("X-HTTP-Method-Override")!],
           let method = HTTPRequest.Method(override.uppercased()) {
            return method
        }
        return request.method
    }
}

extension ErrorResponse {
    static func firestore(_ error: any Error) -> Response {
        firestore(normalize(error))
    }
}
