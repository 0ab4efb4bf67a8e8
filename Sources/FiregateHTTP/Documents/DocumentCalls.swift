import FiregateBackend
import FiregateModel
import FiregateStore

/// The Firestore RPCs as request-message JSON in, response JSON out. REST's routes and the
/// gRPC handlers both call these, so the two surfaces share one behaviour, one set of limits
/// and the same error messages (gRPC requests arrive here as their proto3 JSON form, which is
/// exactly the REST body).
enum DocumentCalls {
    /// BatchGetDocuments: one item per name, in request order (`found` or `missing`, each with
    /// `readTime`); a new transaction rides on the first.
    static func batchGet(_ database: DocumentDatabase, _ body: JSON, judge: DocumentRulesJudge?) throws(FiregateError) -> [JSON] {
        guard let names = body.member("documents")?.arrayValue else { throw .invalidArgument("batchGet needs a documents list.") }
        let paths = try names.map { item throws(FiregateError) -> ResourcePath in
            guard let name = item.stringValue else { throw .invalidArgument("documents must be names.") }
            let path = try database.id.path(fromName: name)
            guard path.isDocument else { throw .invalidArgument("\"\(name)\" is not a document name.") }
            return path
        }
        let mask = try DocumentRoutes.mask(body.member("mask"))
        let result = try database.batchGet(paths, consistency: try body.consistency())
        try judge?.get(result.value, in: database)
        var items: [JSON] = []
        for (i, (path, doc)) in result.value.enumerated() {
            var entry: JSON = doc.map { ["found": $0.json(database: database.id, mask: mask)] } ?? ["missing": .string(database.id.resourceName(path))]
            entry = entry.withMember("readTime", .string(result.readTime.rfc3339))
            if i == 0, let tx = result.transaction { entry = entry.withMember("transaction", .string(tx)) }
            items.append(entry)
        }
        if items.isEmpty, let tx = result.transaction {
            items.append(["transaction": .string(tx), "readTime": .string(result.readTime.rfc3339)])
        }
        return items
    }

    /// RunQuery: one item per document (at least one, carrying `readTime`); `skippedResults`
    /// and a new transaction ride on the first. `explainOptions` is answered as the emulator
    /// does (see `explainMetrics`).
    static func runQuery(_ database: DocumentDatabase, _ parent: ResourcePath, _ body: JSON, judge: DocumentRulesJudge?) throws(FiregateError) -> [JSON] {
        guard let structured = body.member("structuredQuery"), structured != .null else {
            throw .invalidArgument("runQuery needs a structuredQuery.")
        }
        let query = try Query(structuredQuery: structured, parent: parent, database: database.id)
        let explain = try ExplainRequest(body.member("explainOptions"))
        try judge?.list(query, in: database)
        let result = try database.runQuery(query, consistency: try body.consistency())
        let readTime = JSON.string(result.readTime.rfc3339)
        var items: [JSON] = []
        if explain?.analyze != false {
            items = result.value.documents.map { doc in
                ["document": doc.json(database: database.id, mask: query.projection), "readTime": readTime]
            }
        }
        if items.isEmpty { items = [["readTime": readTime]] }
        if result.value.skipped > 0 { items[0] = items[0].withMember("skippedResults", .int(Int64(result.value.skipped))) }
        if let tx = result.transaction { items[0] = items[0].withMember("transaction", .string(tx)) }
        if let explain { items[items.count - 1] = items[items.count - 1].withMember("explainMetrics", explain.metrics(results: result.value.documents.count)) }
        return items
    }

    /// RunAggregationQuery: a single item with the aggregate fields.
    static func runAggregationQuery(_ database: DocumentDatabase, _ parent: ResourcePath, _ body: JSON, judge: DocumentRulesJudge?) throws(FiregateError) -> [JSON] {
        guard let aggregationQuery = body.member("structuredAggregationQuery"), aggregationQuery != .null,
              let structured = aggregationQuery.member("structuredQuery"), structured != .null
        else {
            throw .invalidArgument("runAggregationQuery needs a structuredAggregationQuery with a structuredQuery.")
        }
        let query = try Query(structuredQuery: structured, parent: parent, database: database.id)
        let aggregations = try Aggregation.parseList(aggregationQuery.member("aggregations"))
        let explain = try ExplainRequest(body.member("explainOptions"))
        try judge?.list(query, in: database)
        let result = try database.runAggregation(query, aggregations: aggregations, consistency: try body.consistency())
        var item: JSON = ["readTime": .string(result.readTime.rfc3339)]
        if explain?.analyze != false {
            var fields = JSON.object([:])
            for (alias, value) in result.value { fields = fields.withMember(alias, value.json) }
            item = item.withMember("result", ["aggregateFields": fields])
        }
        if let tx = result.transaction { item = item.withMember("transaction", .string(tx)) }
        if let explain { item = item.withMember("explainMetrics", explain.metrics(results: 1)) }
        return [item]
    }

    /// ListCollectionIds, paged by the last id of the previous page. Under rules it is the
    /// admin's (production serves it to server credentials only; no rule grants it).
    static func listCollectionIDs(_ database: DocumentDatabase, _ parent: ResourcePath, _ body: JSON, judge: DocumentRulesJudge?) throws(FiregateError) -> JSON {
        if judge != nil {
            throw FiregateError(.permissionDenied, "listCollectionIds needs admin credentials (Bearer owner); security rules do not grant it.")
        }
        var ids = try database.listCollectionIDs(parent: parent, consistency: try body.consistency())
        if let token = body.member("pageToken")?.stringValue, !token.isEmpty {
            let after = try PageToken.collection(token)
            ids = ids.filter { Value.compareUTF8($0, after) > 0 }
        }
        var json: JSON = [:]
        if let size = body.member("pageSize")?.integerLike, size > 0, ids.count > size {
            ids = Array(ids.prefix(Int(size)))
            json = json.withMember("nextPageToken", .string(PageToken.make(collection: ids.last!)))
        }
        if !ids.isEmpty { json = json.withMember("collectionIds", .array(ids.map(JSON.string))) }
        return json
    }

    /// ListDocuments: a page of a collection, `nextPageToken` when more follow.
    static func listDocuments(_ database: DocumentDatabase, _ collection: ResourcePath, mask: [FieldPath]?, pageSize: Int?, pageToken: String?,
                              orderBy: String, showMissing: Bool, consistency: ReadConsistency, judge: DocumentRulesJudge?) throws(FiregateError) -> JSON {
        let offset = try PageToken.offset(pageToken)
        let orderings = try DocumentRoutes.parseOrderBy(orderBy)
        let limit = pageSize.map { $0 == 0 ? 300 : $0 }
        if let judge, let collectionID = collection.segments.last {
            let parent = ResourcePath(Array(collection.segments.dropLast()))
            try judge.list(Query(parent: parent, collectionID: collectionID, orderBy: orderings, offset: offset, limit: limit), in: database)
        }
        let listed = try database.list(collection: collection, orderBy: orderings, offset: offset, limit: limit.map { $0 + 1 },
                                       showMissing: showMissing, consistency: consistency)
        var page = listed.value
        var nextPageToken: String?
        if let limit, page.count > limit {
            page.removeLast()
            nextPageToken = PageToken.make(offset: offset + limit)
        }
        let documents = page.map { entry -> JSON in
            switch entry {
            case .found(let doc): doc.json(database: database.id, mask: mask)
            case .missing(let path): ["name": .string(database.id.resourceName(path))]
            }
        }
        var json: JSON = [:]
        if !documents.isEmpty { json = json.withMember("documents", .array(documents)) }
        if let nextPageToken { json = json.withMember("nextPageToken", .string(nextPageToken)) }
        return json
    }

    /// CreateDocument: `document` must not be named; the id is given or made.
    static func createDocument(_ database: DocumentDatabase, _ collection: ResourcePath, id: String?, document: JSON,
                               judge: DocumentRulesJudge?) async throws(FiregateError) -> ResourcePath {
        let id = id.flatMap { $0.isEmpty ? nil : $0 } ?? AutoID.make()
        try ResourcePath.validateID(id)
        let path = collection.appending(id)
        if let name = document.member("name")?.stringValue, !name.isEmpty {
            throw .invalidArgument("A document to create must not have a name; use documentId.")
        }
        let fields = try Value.parseFields(document.member("fields"))
        try Write.validateFieldNames(fields)
        let write = Write(path: path, operation: .update(fields: fields, mask: nil), precondition: Precondition(exists: false))
        _ = try await database.commit([write], judge: judge)
        return path
    }

    /// UpdateDocument (REST's PATCH): the fields, limited to `updateMask` when given.
    static func updateDocument(_ database: DocumentDatabase, _ path: ResourcePath, document: JSON, updateMask: [String]?,
                               precondition: Precondition, judge: DocumentRulesJudge?) async throws(FiregateError) {
        if let name = document.member("name")?.stringValue, !name.isEmpty, try database.id.path(fromName: name) != path {
            throw .invalidArgument("The document name in the body does not match the URL.")
        }
        let fields = try Value.parseFields(document.member("fields"))
        try Write.validateFieldNames(fields)
        let mask = try updateMask.map { paths throws(FiregateError) in
            try paths.map { text throws(FiregateError) in try FieldPath.parseWritable(text) }
        }
        let write = Write(path: path, operation: .update(fields: fields, mask: mask), precondition: precondition)
        _ = try await database.commit([write], judge: judge)
    }

    /// The stored document, as written by a create or an update.
    static func written(_ database: DocumentDatabase, _ path: ResourcePath, mask: [FieldPath]?) throws(FiregateError) -> JSON {
        guard let document = try database.get(path).value else { throw DocumentRoutes.notFound(database.id, path) }
        return document.json(database: database.id, mask: mask)
    }

    static func parseWrites(_ body: JSON, _ database: DocumentDatabase) throws(FiregateError) -> [Write] {
        guard let list = body.member("writes"), list != .null else { return [] }
        guard let items = list.arrayValue else { throw .invalidArgument("writes must be a list.") }
        return try items.map { item throws(FiregateError) in try Write(json: item, database: database.id) }
    }

    static func commit(_ database: DocumentDatabase, _ body: JSON, judge: DocumentRulesJudge?,
                       receipt: QueuedWriteReceipt? = nil) async throws(FiregateError) -> JSON {
        let writes = try parseWrites(body, database)
        var transaction: String?
        if let tx = body.member("transaction"), tx != .null {
            guard let id = tx.stringValue else { throw .invalidArgument("transaction must be a base64 string.") }
            if !id.isEmpty { transaction = id }
        }
        return try await database.commit(writes, transaction: transaction, judge: judge, receipt: receipt).restJSON
    }

    /// BatchWrite: each write on its own, with a status per write.
    /// BatchWrite is an admin API (the Admin SDKs' BulkWriter; the client SDKs never call it):
    /// anyone else is refused, rules or not, as by the official emulator.
    static func requireAdmin(_ identity: CallIdentity) throws(FiregateError) {
        guard identity == .admin else { throw FiregateError(.permissionDenied, "Batch writes require admin authentication.") }
    }

    static func batchWrite(_ database: DocumentDatabase, _ body: JSON, judge: DocumentRulesJudge?) async throws(FiregateError) -> JSON {
        let writes = try parseWrites(body, database)
        let results = try await database.batchWrite(writes, judge: judge)
        var writeResults: [JSON] = []
        var statuses: [JSON] = []
        for result in results {
            switch result {
            case .success(let writeResult):
                writeResults.append(writeResult.restJSON)
                statuses.append([:])
            case .failure(let error):
                writeResults.append([:])
                statuses.append(["code": .int(Int64(error.status.code)), "message": .string(error.message)])
            }
        }
        return ["writeResults": .array(writeResults), "status": .array(statuses)]
    }

    static func beginTransaction(_ database: DocumentDatabase, _ body: JSON) throws(FiregateError) -> JSON {
        let options = try body.member("options").flatMap { options throws(FiregateError) -> TransactionOptions? in
            options == .null ? nil : try TransactionOptions(json: options)
        }
        let id = try database.beginTransaction(options ?? .readWrite(retrying: nil))
        return ["transaction": .string(id)]
    }

    static func rollback(_ database: DocumentDatabase, _ body: JSON) throws(FiregateError) {
        guard let id = body.member("transaction")?.stringValue, !id.isEmpty else {
            throw .invalidArgument("rollback needs a transaction.")
        }
        try database.rollback(id)
    }
}

/// `explainOptions` of a query: the emulator answers with plan and, when analysed, execution
/// figures, and leaves the results out when not analysed.
struct ExplainRequest {
    let analyze: Bool

    init?(_ json: JSON?) throws(FiregateError) {
        guard let json, json != .null else { return nil }
        guard case .object = json else { throw .invalidArgument("explainOptions must be an object.") }
        if let value = json.member("analyze"), value != .null {
            guard let flag = value.boolValue else { throw .invalidArgument("explainOptions.analyze must be a boolean.") }
            analyze = flag
        } else {
            analyze = false
        }
    }

    func metrics(results: Int) -> JSON {
        var metrics: JSON = ["planSummary": ["indexesUsed": .array([])]]
        if analyze {
            metrics = metrics.withMember("executionStats", [
                "resultsReturned": .string(String(results)),
                "executionDuration": .string("0s"),
                "readOperations": .string(String(max(results, 1))),
                "debugStats": ["documents_scanned": .string(String(results)), "index_entries_scanned": .string("0")],
            ])
        }
        return metrics
    }
}
