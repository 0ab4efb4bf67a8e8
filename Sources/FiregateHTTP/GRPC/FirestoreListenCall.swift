import FiregateBackend
import FiregateModel
import FiregateProto
import NIOCore
import ServiceLifecycle
import SwiftProtobuf
import Synchronization

/// A Listen stream: the client's requests and the database's commits, turned into responses by
/// `ListenTargets`. One task owns the response side; the requests arrive through `ListenInbox`,
/// which wakes that task through the feed subscription it waits on. The stream never ends with
/// OK on the server's initiative: shutdown ends it UNAVAILABLE, so clients reconnect and resume.
/// A half-close ends it OK (grpc-js's `call.end()` is how the Node SDKs unsubscribe).
struct FirestoreListenCall {
    let backend: Backend
    let options: ListenOptions
    let ticket: GRPCCallTicket?

    func run<Body>(requests: GRPCMessageReader, responses: inout GRPCMessageWriter<Body>, channel: any Channel,
                   readers: GRPCRequestReaders) async -> FiregateError? {
        var reader = requests
        let database: DocumentDatabase
        let first: Google_Firestore_V1_ListenRequest
        do {
            guard let request = try await reader.next(Google_Firestore_V1_ListenRequest.self) else { return nil }
            first = request
            database = backend.documents.database(try FirestoreResourceName.database(request.database))
        } catch {
            return error
        }
        let subscription = database.feed.subscribe(bufferLimit: options.bufferLimit)
        let inbox = ListenInbox(subscription: subscription)
        readers.start { [reader = RequestReaderHandOff(reader)] in
            var reader = reader.reader
            do {
                while let request = try await reader.next(Google_Firestore_V1_ListenRequest.self) { await inbox.push(request) }
                inbox.end(nil)
            } catch {
                inbox.end(ErrorResponse.normalize(error))
            }
        }
        channel.closeFuture.whenComplete { _ in inbox.end(.cancelled("The client cancelled the stream.")) }
        ticket?.onTerminate { error in subscription.deliver(.closed(error)) }
        return await FirestoreListenCall.answer(first: first, database: database, backend: backend, inbox: inbox, subscription: subscription,
                                                access: FirestoreGRPCService.caller, listens: { ticket?.setListens($0) },
                                                timeline: ticket.map { backend.timelines.recorder(TimelineLane.connectionID($0.entryID)) },
                                                responses: &responses)
    }

    /// The engine of every Listen stream, gRPC's and WebChannel's: answers the requests `inbox`
    /// hands over (after `first`, when the caller read it already) and the database's commits,
    /// until the request side ends or the subscription closes. `listens` hears the open target
    /// count after each batch of requests; `timeline`, the connection's lane, what the client is told.
    static func answer<Sink: FirestoreStreamSink>(first: Google_Firestore_V1_ListenRequest?, database: DocumentDatabase, backend: Backend,
                                                  inbox: ListenInbox, subscription: FeedSubscription, access caller: RulesCaller?,
                                                  listens: (Int) -> Void, timeline: TimelineRecorder?, responses: inout Sink) async -> FiregateError? {
        defer { subscription.cancel() }
        var targets = ListenTargets(database: database, startingAfter: subscription.startsAfter)
        targets.access = caller.map { ListenAccess(rules: backend.rules, caller: $0) }
        targets.timeline = timeline.map(ListenTimeline.init)
        return await withGracefulShutdownHandler {
            do {
                if let first {
                    try await responses.send(all: try targets.handle(first))
                    listens(targets.count)
                }
                while true {
                    let (pending, ended) = inbox.take()
                    for request in pending { try await responses.send(all: try targets.handle(request)) }
                    listens(targets.count)
                    // The request side ended: a half-close (nil) ends the call OK once the
                    // requests before it are answered; a reset or a bad frame with its status.
                    // (Waiting on after a half-close also hid a later reset: `ListenInbox.end`
                    // keeps the first ending, so the stream channel's close went unheard.)
                    if case .some(let status) = ended { return status }
                    guard let event = await subscription.next() else { return FiregateError.cancelled("The stream was cancelled.") }
                    let out: [ListenResponse]
                    switch event {
                    case .commit(let record): out = targets.apply(record)
                    case .overflow: out = targets.resynchronise()
                    case .closed(let error): return FiregateError(.unavailable, error.message)
                    case .heartbeat: out = targets.revocations()
                    }
                    try await responses.send(all: out)
                }
            } catch {
                return ErrorResponse.normalize(error)
            }
        } onGracefulShutdown: {
            subscription.deliver(.closed(.unavailable("The server is shutting down.")))
        }
    }
}

/// Where a Firestore stream's responses go: gRPC frames on an HTTP/2 stream, or a WebChannel
/// session's arrays.
protocol FirestoreStreamSink {
    mutating func send(_ message: some SwiftProtobuf.Message) async throws
    mutating func send<Message: SwiftProtobuf.Message>(all messages: [Message]) async throws
}

extension GRPCMessageWriter: FirestoreStreamSink {}

/// Requests read from a Listen stream, waiting for the task that answers them. Bounded: the
/// reader waits while `limit` requests are queued, so a client that floods requests without
/// reading its responses is held back by HTTP/2 flow control, not by memory.
final class ListenInbox: Sendable {
    private struct State {
        var requests: [Google_Firestore_V1_ListenRequest] = []
        /// Set once the request side ended: nil status for a half-close, else why.
        var ended: FiregateError??
        var reader: CheckedContinuation<Void, Never>?
    }

    static let limit = 64

    private let state = Mutex(State())
    private let subscription: FeedSubscription

    init(subscription: FeedSubscription) {
        self.subscription = subscription
    }

    func push(_ request: Google_Firestore_V1_ListenRequest) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                state.requests.append(request)
                guard state.requests.count >= ListenInbox.limit, state.ended == nil else { return true }
                state.reader = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        subscription.deliver(.heartbeat)
    }

    func end(_ status: FiregateError?) {
        let (first, reader) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            defer { state.reader = nil }
            guard state.ended == nil else { return (false, state.reader) }
            state.ended = .some(status)
            return (true, state.reader)
        }
        reader?.resume()
        if first { subscription.deliver(.heartbeat) }
    }

    /// The requests waiting, and whether the request side ended (with its status).
    func take() -> (requests: [Google_Firestore_V1_ListenRequest], ended: FiregateError??) {
        let (taken, reader) = state.withLock { state in
            defer {
                state.requests.removeAll()
                state.reader = nil
            }
            return ((state.requests, state.ended), state.reader)
        }
        reader?.resume()
        return taken
    }
}
