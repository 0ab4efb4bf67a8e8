import FiregateBackend
import FiregateModel
import FiregateProto
import Hummingbird
import HummingbirdCore
import HTTPTypes
import NIOCore
import NIOHPACK
import SwiftProtobuf

/// `google.firestore.v1.Firestore` over gRPC (docs/wire/grpc.md): every RPC is the twin of a REST
/// route and calls the same code (`DocumentCalls`), so results, limits and error messages are
/// the same; errors become `grpc-status` and `grpc-message` trailers.
struct FirestoreGRPCService: Sendable {
    let backend: Backend
    let listenOptions: ListenOptions
    let connections: GRPCConnections
    /// On replicas: writes and transactions go to the database's owner.
    var forwarding: OwnerForwarding?
    /// Each event loop's wake-ups of the Listen calls it serves (`GRPCListenStream`).
    let wakeQueues = EventLoopWakeQueues()

    static let pathPrefix = "/google.firestore.v1.Firestore/"

    /// A call's response head: `Firegate-Replica` too when replicas share a PostgreSQL store.
    var responseHead: HPACKHeaders {
        guard let replica = backend.replicas?.replicaID else { return GRPCFastPath.responseHead }
        var head = GRPCFastPath.responseHead
        head.add(name: "firegate-replica", value: replica)
        return head
    }

    /// The service's methods (docs/wire/grpc.md).
    static let methods: Set<Substring> = [
        "GetDocument", "ListDocuments", "CreateDocument", "UpdateDocument", "DeleteDocument", "BatchGetDocuments",
        "BeginTransaction", "Commit", "Rollback", "RunQuery", "RunAggregationQuery", "PartitionQuery", "Listen", "Write",
        "ListCollectionIds", "BatchWrite", "ExecutePipeline",
    ]

    /// Whether an HTTP/2 request is a gRPC call (anything else goes to the HTTP responder).
    static func isGRPC(_ request: Request) -> Bool {
        request.method == .post && (request.headers[.contentType]?.hasPrefix("application/grpc") ?? false)
    }

    /// Serves one call: the head at once, then the method's messages, then the status. A call
    /// is admitted through the connections registry first (a network switch may hold it offline).
    func respond(to request: Request, writer: consuming ResponseWriter, channel: any Channel) async throws {
        var head = HTTPResponse(status: .ok, headerFields: [.contentType: "application/grpc"])
        if let replica = backend.replicas?.replicaID { head.headerFields[FiregateResponder.replicaHeader] = replica }
        var responses = GRPCMessageWriter(try await writer.writeHead(head))
        var requests = GRPCMessageReader(request.body)
        var status: FiregateError?
        var ticket: GRPCCallTicket?
        if request.headers[HTTPField.Name("grpc-encoding")!].map({ $0 != "identity" }) ?? false {
            status = .unimplemented("Request compression is not supported; send messages uncompressed (grpc-encoding: identity).")
        } else if let scope = await GRPCConnections.scope(of: request.headers, orFirstMessageOf: &requests) {
            let caller = GRPCCaller(scope, appID: request.headers[HTTPField.Name("x-firebase-gmpid")!], authorization: request.headers[.authorization],
                                    userAgent: request.headers[.userAgent])
            ticket = await admit(caller, channel)
            if ticket == nil { status = .unavailable("The network is offline for \(scope.name) (a Firegate network switch).") }
        }
        var caller: RulesCaller?
        if status == nil {
            do {
                caller = try backend.rules.caller(token: CallIdentity.bearerToken(request.headers[.authorization]), judged: backend.rules.isActive,
                                                  surface: "grpc")
            } catch {
                status = error
            }
        }
        let readers = GRPCRequestReaders()
        if status == nil {
            requests.ticket = ticket
            responses.ticket = ticket
            status = await FirestoreGRPCService.$caller.withValue(caller) {
                await FirestoreGRPCService.$authorization.withValue(request.headers[.authorization]) {
                    await serve(path: request.uri.path, requests: &requests, responses: &responses, ticket: ticket, channel: channel, readers: readers)
                }
            }
        }
        ticket?.end()
        connections.finished(request.uri.path.dropFirst(FirestoreGRPCService.pathPrefix.count), status: ticket?.terminated ?? status, ticket: ticket)
        var unsent: (any Error)?
        do { try await responses.finish(ticket?.terminated ?? status) } catch { unsent = error }
        await readers.waitForAll()
        if let unsent { throw unsent }
    }

    /// A call the switch refuses waits up to a second for the network to come back before it
    /// fails UNAVAILABLE, like a connection attempt timing out: clients that retry at once
    /// (the Python client's Listen) do not spin.
    func admit(_ caller: GRPCCaller, _ channel: any Channel) async -> GRPCCallTicket? {
        let connection = connections.connection(of: channel)
        let deadline = ContinuousClock.now + .seconds(1)
        while true {
            if let ticket = connection.begin(caller) { return ticket }
            guard ContinuousClock.now < deadline, (try? await Task.sleep(for: .milliseconds(50))) != nil else { return nil }
        }
    }

    /// The timeline lane of the connection a call was admitted on.
    func timeline(_ ticket: GRPCCallTicket?) -> TimelineRecorder? {
        ticket.map { backend.timelines.recorder(TimelineLane.connectionID($0.entryID)) }
    }

    func serve<Body: ResponseBodyWriter>(path: String, requests: inout GRPCMessageReader, responses: inout GRPCMessageWriter<Body>,
                                         ticket: GRPCCallTicket?, channel: any Channel, readers: GRPCRequestReaders) async -> FiregateError? {
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
            case "Commit": try await unary(&requests, &responses) { request throws(FiregateError) in try await commit(request, timeline: timeline(ticket)) }
            case "Rollback": try await unary(&requests, &responses, rollback)
            case "RunQuery": try await streaming(&requests, &responses, runQuery)
            case "RunAggregationQuery": try await streaming(&requests, &responses, runAggregationQuery)
            case "PartitionQuery": try await unary(&requests, &responses, partitionQuery)
            case "ListCollectionIds": try await unary(&requests, &responses, listCollectionIDs)
            case "BatchWrite": try await unary(&requests, &responses, batchWrite)
            case "Listen":
                return await FirestoreListenCall(backend: backend, options: listenOptions, ticket: ticket)
                    .run(requests: requests, responses: &responses, channel: channel, readers: readers)
            case "Write":
                return await FirestoreWriteCall(backend: backend, ticket: ticket, forwarding: forwarding, timeline: timeline(ticket))
                    .run(requests: requests, responses: &responses, channel: channel, readers: readers)
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
