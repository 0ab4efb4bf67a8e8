import FiregateBackend
import Synchronization
import FiregateModel
import FiregateProto
import NIOCore
import SwiftProtobuf

/// The unary and server-streaming RPCs, each the gRPC twin of a REST route.
extension FirestoreGRPCService {
    func database(_ id: DatabaseID) -> DocumentDatabase { backend.documents.database(id) }

    /// The caller of the call being served, when rules are loaded (set by `respond`).
    @TaskLocal static var caller: RulesCaller?

    /// The judge of this call's requests to `database`, or nil when they are not judged.
    func judge(_ database: DocumentDatabase) -> DocumentRulesJudge? {
        FirestoreGRPCService.caller.flatMap { backend.rules.documentJudge(database.id, caller: $0) }
    }

    /// The database and path a request names; a document name where `document` is true.
    func resolve(_ name: String, document: Bool? = nil) throws(FiregateError) -> (DocumentDatabase, ResourcePath) {
        let (id, path) = try FirestoreResourceName.document(name)
        if let document {
            if document, !path.isDocument { throw .invalidArgument("\"\(name)\" is not a document name.") }
            if !document, path.isCollection { throw .invalidArgument("\"\(name)\" is not a document or the documents root.") }
        }
        return (database(id), path)
    }

    /// GetDocument as a framed response: the latest version of a whole document from its cached
    /// encoding (made once per version), else the general answer.
    func getDocumentMessage(_ request: Google_Firestore_V1_GetDocumentRequest, database id: DatabaseID, path: ResourcePath) throws(FiregateError) -> ByteBuffer {
        guard !request.hasMask, request.consistencySelector == nil, path.isDocument, judge(database(id)) == nil else {
            return try GRPCFraming.frame(try getDocument(request))
        }
        let database = database(id)
        let encoded: [UInt8]?
        do {
            encoded = try database.encodedMessage(path) { document in try document.proto(database: id).serializedBytes() }
        } catch {
            throw .internal("Could not encode the document: \(error)")
        }
        guard let encoded else { throw DocumentRoutes.notFound(id, path) }
        return GRPCFraming.frame(bytes: encoded)
    }

    func getDocument(_ request: Google_Firestore_V1_GetDocumentRequest) throws(FiregateError) -> Google_Firestore_V1_Document {
        let (database, path) = try resolve(request.name, document: true)
        let json = try request.restJSON()
        let mask = try DocumentRoutes.mask(json.member("mask"))
        let document = try database.get(path, consistency: try json.consistency()).value
        try judge(database)?.get([(path, document)], in: database)
        guard let document else { throw DocumentRoutes.notFound(database.id, path) }
        return document.proto(database: database.id, mask: mask)
    }

    func listDocuments(_ request: Google_Firestore_V1_ListDocumentsRequest) async throws(FiregateError) -> Google_Firestore_V1_ListDocumentsResponse {
        let (database, parent) = try resolve(request.parent, document: false)
        guard !request.collectionID.isEmpty else { throw .invalidArgument("ListDocuments needs a collection_id.") }
        try ResourcePath.validateID(request.collectionID)
        let json = try request.restJSON()
        let page = try DocumentCalls.listDocuments(
            database, parent.appending(request.collectionID), mask: try DocumentRoutes.mask(json.member("mask")),
            pageSize: request.pageSize > 0 ? Int(request.pageSize) : nil, pageToken: request.pageToken, orderBy: request.orderBy,
            showMissing: request.showMissing, consistency: try json.consistency(), judge: judge(database))
        return try Google_Firestore_V1_ListDocumentsResponse(restJSON: page)
    }

    func createDocument(_ request: Google_Firestore_V1_CreateDocumentRequest) async throws(FiregateError) -> Google_Firestore_V1_Document {
        let (database, parent) = try resolve(request.parent, document: false)
        guard !request.collectionID.isEmpty else { throw .invalidArgument("CreateDocument needs a collection_id.") }
        try ResourcePath.validateID(request.collectionID)
        let json = try request.restJSON()
        var query = Self.query(precondition: nil, mask: json.member("mask"))
        if !request.documentID.isEmpty { query.insert(("documentId", request.documentID), at: 0) }
        if let answer = try await forwarded(database.id, method: .POST, Self.restURI("\(request.parent)/\(request.collectionID)", query: query),
                                            try request.document.restJSON()) {
            return try Google_Firestore_V1_Document(restJSON: answer)
        }
        let path = try await DocumentCalls.createDocument(database, parent.appending(request.collectionID), id: request.documentID,
                                                          document: try request.document.restJSON(), judge: judge(database))
        let mask = try DocumentRoutes.mask(json.member("mask"))
        return try Google_Firestore_V1_Document(restJSON: try DocumentCalls.written(database, path, mask: mask))
    }

    func updateDocument(_ request: Google_Firestore_V1_UpdateDocumentRequest) async throws(FiregateError) -> Google_Firestore_V1_Document {
        let (database, path) = try resolve(request.document.name, document: true)
        let json = try request.restJSON()
        let query = Self.query(precondition: json.member("currentDocument"), mask: json.member("mask"), updateMask: json.member("updateMask"))
        if let answer = try await forwarded(database.id, method: .PATCH, Self.restURI(request.document.name, query: query), try request.document.restJSON()) {
            return try Google_Firestore_V1_Document(restJSON: answer)
        }
        try await DocumentCalls.updateDocument(database, path, document: try request.document.restJSON(),
                                               updateMask: request.hasUpdateMask ? request.updateMask.fieldPaths : nil,
                                               precondition: try Precondition(json: json.member("currentDocument")), judge: judge(database))
        return try Google_Firestore_V1_Document(restJSON: try DocumentCalls.written(database, path, mask: try DocumentRoutes.mask(json.member("mask"))))
    }

    func deleteDocument(_ request: Google_Firestore_V1_DeleteDocumentRequest) async throws(FiregateError) -> Google_Protobuf_Empty {
        let (database, path) = try resolve(request.name, document: true)
        let json = try request.restJSON()
        if try await forwarded(database.id, method: .DELETE, Self.restURI(request.name, query: Self.query(precondition: json.member("currentDocument"), mask: nil)),
                               nil) != nil {
            return Google_Protobuf_Empty()
        }
        let precondition = try Precondition(json: json.member("currentDocument"))
        _ = try await database.commit([Write(path: path, operation: .delete, precondition: precondition)], judge: judge(database))
        return Google_Protobuf_Empty()
    }

    func batchGetDocuments(_ request: Google_Firestore_V1_BatchGetDocumentsRequest) async throws(FiregateError) -> [Google_Firestore_V1_BatchGetDocumentsResponse] {
        let database = database(try FirestoreResourceName.database(request.database))
        let json = try request.restJSON()
        if Self.inTransaction(json), let answer = try await forwarded(database.id, Self.restURI(database.id, verb: "batchGet"), Self.body(json, without: ["database"])) {
            return try (answer.arrayValue ?? []).map { item throws(FiregateError) in try Google_Firestore_V1_BatchGetDocumentsResponse(restJSON: item) }
        }
        return try DocumentCalls.batchGet(database, json, judge: judge(database)).map { item throws(FiregateError) in
            try Google_Firestore_V1_BatchGetDocumentsResponse(restJSON: item)
        }
    }

    func beginTransaction(_ request: Google_Firestore_V1_BeginTransactionRequest) async throws(FiregateError) -> Google_Firestore_V1_BeginTransactionResponse {
        let database = database(try FirestoreResourceName.database(request.database))
        let json = try request.restJSON()
        if let answer = try await forwarded(database.id, Self.restURI(database.id, verb: "beginTransaction"), Self.body(json, without: ["database"])) {
            return try Google_Firestore_V1_BeginTransactionResponse(restJSON: answer)
        }
        return try Google_Firestore_V1_BeginTransactionResponse(restJSON: try DocumentCalls.beginTransaction(database, json))
    }

    /// A durable commit's response, framed.
    static func commitResponse(_ result: CommitResult) throws(FiregateError) -> ByteBuffer {
        try GRPCFraming.frame(result.proto)
    }

    /// A unary Commit; `timeline`, the connection's lane, hears it sent and answered.
    func commit(_ request: Google_Firestore_V1_CommitRequest, timeline: TimelineRecorder?) async throws(FiregateError) -> Google_Firestore_V1_CommitResponse {
        let database = database(try FirestoreResourceName.database(request.database))
        return try Google_Firestore_V1_CommitResponse(restJSON: try await Self.commit(database, try request.restJSON(), writes: request.writes,
                                                                                  judge: judge(database), forwarding: forwarding, timeline: timeline,
                                                                                  writeID: FirestoreGRPCService.nextCommitID()))
    }

    private static let commitCount = Atomic<Int>(0)

    /// `u1`, `u2`, …: unary commits as a connection's timeline names them, unique in the server.
    static func nextCommitID() -> String { "u\(commitCount.add(1, ordering: .relaxed).newValue)" }

    func rollback(_ request: Google_Firestore_V1_RollbackRequest) async throws(FiregateError) -> Google_Protobuf_Empty {
        let database = database(try FirestoreResourceName.database(request.database))
        let json = try request.restJSON()
        if try await forwarded(database.id, Self.restURI(database.id, verb: "rollback"), Self.body(json, without: ["database"])) != nil {
            return Google_Protobuf_Empty()
        }
        try DocumentCalls.rollback(database, json)
        return Google_Protobuf_Empty()
    }

    func runQuery(_ request: Google_Firestore_V1_RunQueryRequest) async throws(FiregateError) -> [Google_Firestore_V1_RunQueryResponse] {
        let (database, parent) = try resolve(request.parent, document: false)
        let json = try request.restJSON()
        if Self.inTransaction(json), let answer = try await forwarded(database.id, Self.restURI(request.parent + ":runQuery", query: []),
                                                                     Self.body(json, without: ["parent"])) {
            return try (answer.arrayValue ?? []).map { item throws(FiregateError) in try Google_Firestore_V1_RunQueryResponse(restJSON: item) }
        }
        return try DocumentCalls.runQuery(database, parent, json, judge: judge(database)).map { item throws(FiregateError) in
            try Google_Firestore_V1_RunQueryResponse(restJSON: item)
        }
    }

    func runAggregationQuery(_ request: Google_Firestore_V1_RunAggregationQueryRequest) async throws(FiregateError) -> [Google_Firestore_V1_RunAggregationQueryResponse] {
        let (database, parent) = try resolve(request.parent, document: false)
        let json = try request.restJSON()
        if Self.inTransaction(json), let answer = try await forwarded(database.id, Self.restURI(request.parent + ":runAggregationQuery", query: []),
                                                                     Self.body(json, without: ["parent"])) {
            return try (answer.arrayValue ?? []).map { item throws(FiregateError) in try Google_Firestore_V1_RunAggregationQueryResponse(restJSON: item) }
        }
        return try DocumentCalls.runAggregationQuery(database, parent, json, judge: judge(database)).map { item throws(FiregateError) in
            try Google_Firestore_V1_RunAggregationQueryResponse(restJSON: item)
        }
    }

    /// PartitionQuery: the query is checked, and answered with no split points, which the API
    /// defines as one partition covering the whole result.
    func partitionQuery(_ request: Google_Firestore_V1_PartitionQueryRequest) async throws(FiregateError) -> Google_Firestore_V1_PartitionQueryResponse {
        let (database, parent) = try resolve(request.parent, document: false)
        guard case .structuredQuery(let structured)? = request.queryType else { throw .invalidArgument("PartitionQuery needs a structured_query.") }
        _ = try Query(structuredQuery: try structured.restJSON(), parent: parent, database: database.id)
        return Google_Firestore_V1_PartitionQueryResponse()
    }

    func listCollectionIDs(_ request: Google_Firestore_V1_ListCollectionIdsRequest) async throws(FiregateError) -> Google_Firestore_V1_ListCollectionIdsResponse {
        let (database, parent) = try resolve(request.parent, document: false)
        return try Google_Firestore_V1_ListCollectionIdsResponse(restJSON: try DocumentCalls.listCollectionIDs(database, parent, try request.restJSON(), judge: judge(database)))
    }

    func batchWrite(_ request: Google_Firestore_V1_BatchWriteRequest) async throws(FiregateError) -> Google_Firestore_V1_BatchWriteResponse {
        let database = database(try FirestoreResourceName.database(request.database))
        try DocumentCalls.requireAdmin(FirestoreGRPCService.caller?.identity ?? .unauthenticated)
        let json = try request.restJSON()
        if let answer = try await forwarded(database.id, Self.restURI(database.id, verb: "batchWrite"), Self.body(json, without: ["database"])) {
            return try Google_Firestore_V1_BatchWriteResponse(restJSON: answer)
        }
        return try Google_Firestore_V1_BatchWriteResponse(restJSON: try await DocumentCalls.batchWrite(database, json, judge: judge(database)))
    }
}

extension CommitResult {
    /// The CommitResponse message (the twin of `json`).
    var proto: Google_Firestore_V1_CommitResponse {
        var response = Google_Firestore_V1_CommitResponse()
        response.commitTime = commitTime.proto
        response.writeResults = writeResults.map { result in
            var message = Google_Firestore_V1_WriteResult()
            if let updateTime = result.updateTime { message.updateTime = updateTime.proto }
            if let transformResults = result.transformResults { message.transformResults = transformResults.map(\.proto) }
            return message
        }
        return response
    }
}
