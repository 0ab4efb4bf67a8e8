import FiregateBackend
import FiregateModel
import FiregateProto
import Hummingbird
import HummingbirdCore
import HTTPTypes
import Logging
import NIOCore
import SwiftProtobuf

/// `google.firestore.v1.Firestore` over gRPC (DESIGN §1.5): every RPC is the twin of a REST
/// route and calls the same code (`DocumentCalls`), so results, limits and error messages are
/// the same; errors become `grpc-status` and `grpc-message` trailers.
struct FirestoreGRPCService: Sendable {
    let backend: Backend
    let listenOptions: ListenOptions
    let logger: Logger

    static let pathPrefix = "/google.firestore.v1.Firestore/"

    /// Whether an HTTP/2 request is a gRPC call (anything else goes to the HTTP responder).
    static func isGRPC(_ request: Request) -> Bool {
        request.method == .post && (request.headers[.contentType]?.hasPrefix("application/grpc") ?? false)
    }

    /// Serves one call: the head at once, then the method's messages, then the status.
    func respond(to request: Request, writer: consuming ResponseWriter, channel: any Channel) async throws {
        let head = HTTPResponse(status: .ok, headerFields: [.contentType: "application/grpc"])
        var responses = GRPCMessageWriter(try await writer.writeHead(head))
        var requests = GRPCMessageReader(request.body)
        let status: FiregateError?
        if request.headers[HTTPField.Name("grpc-encoding")!].map({ $0 != "identity" }) ?? false {
            status = .unimplemented("Request compression is not supported; send messages uncompressed (grpc-encoding: identity).")
        } else {
            status = await serve(path: request.uri.path, requests: &requests, responses: &responses, channel: channel)
        }
        try await responses.finish(status)
    }

    func serve<Body: ResponseBodyWriter>(path: String, requests: inout GRPCMessageReader, responses: inout GRPCMessageWriter<Body>,
                                         channel: any Channel) async -> FiregateError? {
        guard path.hasPrefix(FirestoreGRPCService.pathPrefix) else {
            return .unimplemented("Method not found: \(path.dropFirst())")
        }
        let method = path.dropFirst(FirestoreGRPCService.pathPrefix.count)
        do {
            switch method {
            case "GetDocument": try await unary(&requests, &responses, getDocument)
            case "ListDocuments": try await unary(&requests, &responses, listDocuments)
            case "CreateDocument": try await unary(&requests, &responses, createDocument)
            case "UpdateDocument": try await unary(&requests, &responses, updateDocument)
            case "DeleteDocument": try await unary(&requests, &responses, deleteDocument)
            case "BatchGetDocuments": try await streaming(&requests, &responses, batchGetDocuments)
            case "BeginTransaction": try await unary(&requests, &responses, beginTransaction)
            case "Commit": try await unary(&requests, &responses, commit)
            case "Rollback": try await unary(&requests, &responses, rollback)
            case "RunQuery": try await streaming(&requests, &responses, runQuery)
            case "RunAggregationQuery": try await streaming(&requests, &responses, runAggregationQuery)
            case "PartitionQuery": try await unary(&requests, &responses, partitionQuery)
            case "ListCollectionIds": try await unary(&requests, &responses, listCollectionIDs)
            case "BatchWrite": try await unary(&requests, &responses, batchWrite)
            case "Listen":
                return await FirestoreListenCall(backend: backend, options: listenOptions).run(requests: requests, responses: &responses, channel: channel)
            case "Write":
                try await FirestoreWriteCall(backend: backend).run(requests: &requests, responses: &responses)
            case "ExecutePipeline":
                throw FiregateError.unimplemented("ExecutePipeline is not supported by Firegate (pipelines are an Enterprise edition feature).")
            default:
                throw FiregateError.unimplemented("Method not found: google.firestore.v1.Firestore/\(method)")
            }
            return nil
        } catch {
            return ErrorResponse.normalize(error)
        }
    }

    /// One request, one response.
    func unary<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message, Body: ResponseBodyWriter>(
        _ requests: inout GRPCMessageReader, _ responses: inout GRPCMessageWriter<Body>,
        _ handler: (Request) async throws(FiregateError) -> Response
    ) async throws {
        let request = try await FirestoreGRPCService.single(&requests, Request.self)
        try await responses.send(try await handler(request))
    }

    /// One request, a list of responses (computed at once, as the REST answer is).
    func streaming<Request: SwiftProtobuf.Message, Response: SwiftProtobuf.Message, Body: ResponseBodyWriter>(
        _ requests: inout GRPCMessageReader, _ responses: inout GRPCMessageWriter<Body>,
        _ handler: (Request) async throws(FiregateError) -> [Response]
    ) async throws {
        let request = try await FirestoreGRPCService.single(&requests, Request.self)
        for response in try await handler(request) { try await responses.send(response) }
    }

    static func single<Request: SwiftProtobuf.Message>(_ requests: inout GRPCMessageReader, _ type: Request.Type) async throws(FiregateError) -> Request {
        guard let request = try await requests.next(Request.self) else {
            throw .invalidArgument("The call carried no \(Request.protoMessageName) message.")
        }
        return request
    }
}
