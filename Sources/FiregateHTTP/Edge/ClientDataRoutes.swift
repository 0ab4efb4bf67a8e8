import FiregateBackend
import FiregateEdge
import FiregateModel
import Hummingbird
import HTTPTypes

/// The documents API through one edge client: the backend's URLs and bodies under
/// `/clients/{id}`, answered from the client's local view with the metadata headers.
struct ClientDataRoutes {
    let client: EdgeClient
    let documents: DocumentRoutes
    /// The tab making the call, when the client is a tab of a shared persistence.
    var tab: String?

    static let fromCacheHeader = HTTPField.Name("Firegate-From-Cache")!
    static let pendingHeader = HTTPField.Name("Firegate-Has-Pending-Writes")!
    static let writeIDHeader = HTTPField.Name("Firegate-Write-Id")!
    static let writeStateHeader = HTTPField.Name("Firegate-Write-State")!
    static let queryPlanHeader = HTTPField.Name("Firegate-Query-Plan")!
    static let documentsReadHeader = HTTPField.Name("Firegate-Documents-Read")!

    func respond(_ request: Request, prefixLength: Int) async -> Response {
        do {
            return try await route(request, prefixLength: prefixLength)
        } catch {
            return await errorResponse(error)
        }
    }

    func route(_ request: Request, prefixLength: Int) async throws(FiregateError) -> Response {
        let target = try DocumentRequestPath.parse(request.uri.path, prefixLength: prefixLength)
        let settings = await client.settings
        guard target.database == settings.databaseID else {
            throw .invalidArgument("This client is configured for \(settings.databaseID.name), not \(target.database.name).")
        }
        let params = try QueryParameters(request)
        let method = DocumentRoutes.effectiveMethod(request)
        switch (method, target.verb) {
        case (.get, nil) where target.path.isDocument:
            return try await getDocument(target, params)
        case (.get, nil) where target.path.isCollection:
            let query = Query(parent: target.path.parent, collectionID: target.path.lastSegment,
                              orderBy: try DocumentRoutes.parseOrderBy(params.first("orderBy") ?? ""),
                              limit: try params.int("pageSize").flatMap { $0 == 0 ? nil : $0 })
            let read = try await client.runQuery(query, source: try source(params))
            var docs: [JSON] = []
            for doc in read.value { docs.append(try render(doc, target.database, params)) }
            return respond(documents: docs.isEmpty ? [:] : ["documents": .array(docs)], read)
        case (.post, "runQuery") where !target.path.isCollection:
            let body = try await request.jsonObjectBody()
            guard let structured = body.member("structuredQuery"), structured != .null else { throw .invalidArgument("runQuery needs a structuredQuery.") }
            if body.member("transaction") != nil || body.member("newTransaction") != nil {
                return try await passThrough(target, request, operation: "run a transactional query", body: body)
            }
            var query = try Query(structuredQuery: structured, parent: target.path, database: target.database)
            query.limitToLast = try params.bool("limitToLast") ?? false
            let read = try await client.runQuery(query, source: try source(params))
            let readTime = JSON.string(await client.now().rfc3339)
            var items: [JSON] = []
            for doc in read.value { items.append(["document": try render(doc, target.database, params, mask: query.projection), "readTime": readTime]) }
            if items.isEmpty { items = [["readTime": readTime]] }
            return respond(documents: .array(items), read)
        case (.get, "listen"), (.post, "listen"):
            return try await ClientListenRoute(client: client, ticker: documents.ticker, tab: tab).open(target, request, params)
        case (.post, nil) where target.path.isCollection:
            return try await create(target, request, params)
        case (.patch, nil) where target.path.isDocument:
            return try await patch(target, request, params)
        case (.delete, nil) where target.path.isDocument:
            var precondition = Precondition()
            precondition.exists = try params.bool("currentDocument.exists")
            precondition.updateTime = try params.timestamp("currentDocument.updateTime")
            return try await write([Write(path: target.path, operation: .delete, precondition: precondition)], params) { _ in [:] }
        case (.post, "commit") where target.path.isEmpty:
            let body = try await request.jsonObjectBody()
            if let tx = body.member("transaction"), tx != .null {
                return try await passThrough(target, request, operation: "commit the transaction", body: body)
            }
            let writes = try DocumentCalls.parseWrites(body, documents.backend.documents.database(target.database))
            if writes.isEmpty {
                // Nothing to queue: an empty batch commits at once, as the SDK's does.
                return JSONResponse.make(["commitTime": .string(await client.now().rfc3339)], headers: [
                    ClientDataRoutes.fromCacheHeader: "false", ClientDataRoutes.pendingHeader: "false",
                ])
            }
            return try await write(writes, params) { state in
                if case .acknowledged(let result)? = state { return result.restJSON }
                return ["writeResults": .array(writes.map { _ in [:] })]
            }
        case (.post, "beginTransaction"), (.post, "rollback"), (.post, "batchGet"), (.post, "runAggregationQuery"), (.post, "listCollectionIds"):
            return try await passThrough(target, request, operation: target.verb ?? "read")
        default:
            throw .notFound("No route for \(request.method) \(request.uri.path)")
        }
    }

    func source(_ params: QueryParameters) throws(FiregateError) -> ReadSource {
        guard let text = params.first("source") else { return .default }
        guard let source = ReadSource(rawValue: text.lowercased()) else {
            throw .invalidArgument("source must be default, server or cache.")
        }
        return source
    }

    func serverTimestamps(_ params: QueryParameters) throws(FiregateError) -> ServerTimestampBehavior {
        guard let text = params.first("serverTimestamps") else { return .none }
        guard let behavior = ServerTimestampBehavior(rawValue: text.lowercased()) else {
            throw .invalidArgument("serverTimestamps must be estimate, previous or none.")
        }
        return behavior
    }

    func render(_ doc: LocalDocument, _ database: DatabaseID, _ params: QueryParameters, mask: [FieldPath]? = nil) throws(FiregateError) -> JSON {
        var document = doc.document
        document.fields = try serverTimestamps(params).resolve(document.fields)
        let shown = try params.mask()
        return document.json(database: database, mask: mask ?? shown)
    }

    func respond<T>(documents body: JSON, _ read: EdgeRead<T>, status: HTTPResponse.Status = .ok) -> Response {
        var headers: HTTPFields = [
            ClientDataRoutes.fromCacheHeader: read.fromCache ? "true" : "false",
            ClientDataRoutes.pendingHeader: read.hasPendingWrites ? "true" : "false",
        ]
        if let plan = read.plan { headers[ClientDataRoutes.queryPlanHeader] = plan }
        if let count = read.documentsRead { headers[ClientDataRoutes.documentsReadHeader] = String(count) }
        return JSONResponse.make(body, status: status, headers: headers)
    }

    func getDocument(_ target: DocumentRequestPath, _ params: QueryParameters) async throws(FiregateError) -> Response {
        _ = try serverTimestamps(params)
        let read = try await client.getDocument(target.path, source: try source(params))
        guard let doc = read.value else {
            let error = FiregateError.notFound("Document \"\(target.database.resourceName(target.path))\" not found.")
            return respond(documents: JSON.errorBody(error), read, status: .notFound)
        }
        return respond(documents: try render(doc, target.database, params), read)
    }

    func create(_ target: DocumentRequestPath, _ request: Request, _ params: QueryParameters) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        let id = params.first("documentId").flatMap { $0.isEmpty ? nil : $0 } ?? AutoID.make()
        try ResourcePath.validateID(id)
        let fields = try Value.parseFields(body.member("fields"))
        try Write.validateFieldNames(fields)
        let path = target.path.appending(id)
        return try await documentWrite(Write(path: path, operation: .update(fields: fields, mask: nil), precondition: Precondition(exists: false)), target, params)
    }

    func patch(_ target: DocumentRequestPath, _ request: Request, _ params: QueryParameters) async throws(FiregateError) -> Response {
        let body = try await request.jsonObjectBody()
        let fields = try Value.parseFields(body.member("fields"))
        try Write.validateFieldNames(fields)
        let maskPaths = params.all("updateMask.fieldPaths")
        let mask = maskPaths.isEmpty ? nil : try maskPaths.map { text throws(FiregateError) in try FieldPath.parseWritable(text) }
        var precondition = Precondition()
        precondition.exists = try params.bool("currentDocument.exists")
        precondition.updateTime = try params.timestamp("currentDocument.updateTime")
        return try await documentWrite(Write(path: target.path, operation: .update(fields: fields, mask: mask), precondition: precondition), target, params)
    }

    /// A single-document write answering with the document: the local version at once, or
    /// the server's after `waitFor=ack`.
    func documentWrite(_ write: Write, _ target: DocumentRequestPath, _ params: QueryParameters) async throws(FiregateError) -> Response {
        let behavior = try serverTimestamps(params)
        let mask = try params.mask()
        let database = documents.backend.documents.database(target.database)
        return try await self.write([write], params) { state in
            if case .acknowledged? = state, let doc = (try? database.get(write.path).value) ?? nil {
                return doc.json(database: target.database, mask: mask)
            }
            guard let local = await client.localDocument(write.path) else { return [:] }
            var doc = local.document
            doc.fields = behavior.resolve(doc.fields)
            return doc.json(database: target.database, mask: mask)
        }
    }

    /// Queues writes as one batch; answers at once, or with `waitFor=ack` once settled (the
    /// server's error when rejected, 504 past `timeoutMs`), always naming the write.
    func write(_ writes: [Write], _ params: QueryParameters, body: (WriteState?) async -> JSON) async throws(FiregateError) -> Response {
        let batch = try await client.write(writes, tab: tab)
        var state = WriteState.pending
        var headers: HTTPFields = [ClientDataRoutes.writeIDHeader: String(batch.id)]
        if params.first("waitFor") == "ack" {
            let timeout = try params.int("timeoutMs") ?? 60_000
            state = await client.waitForAck(batch.id, timeoutMs: timeout)
            headers[ClientDataRoutes.writeStateHeader] = state.name
            switch state {
            case .rejected(let error):
                return await errorResponse(error, headers: headers)
            case .pending:
                return await errorResponse(FiregateError(.deadlineExceeded, "The write was not acknowledged within \(timeout) ms; it stays queued."), headers: headers)
            case .acknowledged:
                break
            }
        }
        let pending = state == .pending
        headers[ClientDataRoutes.writeStateHeader] = state.name
        headers[ClientDataRoutes.fromCacheHeader] = pending ? "true" : "false"
        headers[ClientDataRoutes.pendingHeader] = pending ? "true" : "false"
        return JSONResponse.make(await body(pending ? nil : state), headers: headers)
    }

    /// An error answer with the client's metadata headers (every data answer carries them).
    func errorResponse(_ error: FiregateError, headers extra: HTTPFields = [:]) async -> Response {
        var headers = extra
        headers[ClientDataRoutes.fromCacheHeader] = await client.isOnline ? "false" : "true"
        headers[ClientDataRoutes.pendingHeader] = await client.hasPendingWrites ? "true" : "false"
        return JSONResponse.make(JSON.errorBody(error), status: .init(code: error.httpStatus), headers: headers)
    }

    /// Transactions and other server-only calls go straight to the backend, online only. A body
    /// already read here must be handed on: a request body can be read only once.
    func passThrough(_ target: DocumentRequestPath, _ request: Request, operation: String, body: JSON? = nil) async throws(FiregateError) -> Response {
        try await client.requireNetwork(for: operation)
        var forwarded = request
        if let body {
            forwarded.body = .init(buffer: .init(bytes: JSONWriter.bytes(body)))
        }
        let caller = RulesCaller(identity: await client.rulesIdentity, surface: "edge", client: await client.id)
        let judge = documents.backend.rules.documentJudge(target.database, caller: caller)
        var response = try await documents.dispatch(target, forwarded, judge)
        if let judge { response.headers.rulesDecisions(judge.decisionIDs) }
        response.headers[ClientDataRoutes.fromCacheHeader] = "false"
        response.headers[ClientDataRoutes.pendingHeader] = "false"
        return response
    }
}
