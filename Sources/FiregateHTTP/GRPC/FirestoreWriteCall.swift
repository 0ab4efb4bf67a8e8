import FiregateBackend
import FiregateModel
import FiregateProto
import Foundation
import NIOCore
import ServiceLifecycle
import Synchronization

/// The Write stream the mobile and web SDKs use: a handshake that returns a stream id and
/// token, then one commit per request that carries writes, answered in order with its commit
/// time, results and a new token. A request without writes only acknowledges tokens and gets
/// no answer. A failed commit ends the stream with its status, as the SDKs expect; a network
/// switch or a drop ends it UNAVAILABLE.
struct FirestoreWriteCall {
    typealias Request = Google_Firestore_V1_WriteRequest

    let backend: Backend
    let ticket: GRPCCallTicket?
    /// On replicas: commits go to the database's owner.
    var forwarding: OwnerForwarding?
    /// The connection's timeline lane: each write as it arrives and its outcome.
    var timeline: TimelineRecorder?

    func run<Body>(requests: GRPCMessageReader, responses: inout GRPCMessageWriter<Body>, channel: any Channel,
                   readers: GRPCRequestReaders) async -> FiregateError? {
        let inbox = CallInbox<Request>()
        readers.start { [reader = RequestReaderHandOff(requests)] in
            var reader = reader.reader
            do {
                while let request = try await reader.next(Request.self) { await inbox.push(request) }
                await inbox.end(nil)
            } catch {
                await inbox.end(ErrorResponse.normalize(error))
            }
        }
        ticket?.onTerminate { error in Task { await inbox.end(error) } }
        channel.closeFuture.whenComplete { _ in Task { await inbox.end(.cancelled("The client cancelled the stream.")) } }
        // An open stream must not hold the server up at shutdown: it ends UNAVAILABLE, and the
        // SDK reconnects to whatever serves next.
        return await withGracefulShutdownHandler {
            await answer(inbox, responses: &responses)
        } onGracefulShutdown: {
            Task { await inbox.end(.unavailable("The server is shutting down.")) }
        }
    }

    /// The engine of every Write stream, gRPC's and WebChannel's: the handshake, then one
    /// commit per request with writes, judged as `FirestoreGRPCService.caller`.
    func answer<Sink: FirestoreStreamSink>(_ inbox: CallInbox<Request>, responses: inout Sink) async -> FiregateError? {
        do {
            guard case .element(let handshake) = await inbox.next() else { return await inbox.endStatus }
            let id = try FirestoreResourceName.database(handshake.database)
            let database = backend.documents.database(id)
            guard handshake.writes.isEmpty else {
                throw FiregateError.invalidArgument("The first message of a Write stream is the handshake: it must carry no writes.")
            }
            let streamID = handshake.streamID.isEmpty ? AutoID.make() : handshake.streamID
            var answered = 0
            func nextToken() -> Data {
                answered += 1
                return Data("\(streamID).\(answered)".utf8)
            }
            var opened = Google_Firestore_V1_WriteResponse()
            opened.streamID = streamID
            opened.streamToken = nextToken()
            try await responses.send(opened)
            while case .element(let request) = await inbox.next() {
                if !request.database.isEmpty, try FirestoreResourceName.database(request.database) != id {
                    throw FiregateError.invalidArgument("A Write stream serves one database; \(request.database) is not \(id.name).")
                }
                guard !request.writes.isEmpty else { continue }
                let judge = FirestoreGRPCService.caller.flatMap { backend.rules.documentJudge(id, caller: $0) }
                let result = try await FirestoreGRPCService.commit(database, try request.restJSON(), writes: request.writes, judge: judge,
                                                                   forwarding: forwarding, timeline: timeline, writeID: "w\(answered)")
                var response = try Google_Firestore_V1_WriteResponse(restJSON: result)
                response.streamID = streamID
                response.streamToken = nextToken()
                try await responses.send(response)
            }
            return await inbox.endStatus
        } catch {
            return ErrorResponse.normalize(error)
        }
    }
}

extension FirestoreWriteCall {
    /// The document a write names, as the timeline lists it.
    static func path(_ write: Google_Firestore_V1_Write) -> String {
        switch write.operation {
        case .update(let document)?: ListenTimeline.path(document.name)
        case .delete(let name)?: ListenTimeline.path(name)
        case .transform(let transform)?: ListenTimeline.path(transform.document)
        case .verify(let name)?: ListenTimeline.path(name)
        case nil: ""
        }
    }
}

/// Moves a call's request reader into the task that reads the requests; nothing else uses it after.
struct RequestReaderHandOff: @unchecked Sendable {
    let reader: GRPCMessageReader
    init(_ reader: GRPCMessageReader) { self.reader = reader }
}

/// The tasks a streaming call reads its requests in. They are never cancelled: cancelling a read
/// of the request body ends the HTTP/2 stream at once (RST_STREAM, which clients see as
/// CANCELLED) and can beat the trailers. The call sends its status first, then waits for them:
/// they end when the client closes its side, as any gRPC client does on the status, and
/// Hummingbird reads the rest of the body only after that.
final class GRPCRequestReaders: Sendable {
    private let tasks = Mutex<[Task<Void, Never>]>([])

    func start(_ body: @escaping @Sendable () async -> Void) {
        let task = Task { await body() }
        tasks.withLock { $0.append(task) }
    }

    func waitForAll() async {
        for task in tasks.withLock({ $0 }) { await task.value }
    }
}

/// A call's requests between the task that reads them and the task that answers them, bounded
/// (the reader waits when the answerer is behind, so a flooding client is held by HTTP/2 flow
/// control, not by memory). A termination ends it at once; a half-close after what is queued.
actor CallInbox<Element: Sendable> {
    enum Next { case element(Element), ended }

    static var limit: Int { 16 }

    private var items: [Element] = []
    private var ended: FiregateError??
    private var consumer: CheckedContinuation<Void, Never>?
    private var producer: CheckedContinuation<Void, Never>?

    func push(_ element: Element) async {
        while items.count >= CallInbox.limit, ended == nil {
            await withCheckedContinuation { producer = $0 }
        }
        guard ended == nil else { return }
        items.append(element)
        consumer?.resume()
        consumer = nil
    }

    func end(_ status: FiregateError?) {
        if ended == nil { ended = .some(status) }
        consumer?.resume()
        consumer = nil
        producer?.resume()
        producer = nil
    }

    func next() async -> Next {
        while items.isEmpty, ended == nil {
            await withCheckedContinuation { consumer = $0 }
        }
        if case .some(.some) = ended { return .ended }
        guard !items.isEmpty else { return .ended }
        let element = items.removeFirst()
        producer?.resume()
        producer = nil
        return .element(element)
    }

    /// How the request side ended: nil for a half-close.
    var endStatus: FiregateError? { ended ?? nil }
}
