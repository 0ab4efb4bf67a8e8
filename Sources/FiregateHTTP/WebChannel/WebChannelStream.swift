import FiregateBackend
import FiregateModel
import FiregateProto
import FiregateWebChannel
import SwiftProtobuf
import Synchronization

/// The Firestore stream behind one WebChannel session: Listen or Write, served by the same
/// engines as gRPC's (`FirestoreListenCall.answer`, `FirestoreWriteCall.answer`) with the
/// session as their sink. Messages arrive as proto3 JSON texts (the REST API's JSON) and leave
/// the same way.
final class WebChannelStream: Sendable {
    enum Kind: String, Sendable {
        case listen = "Listen", write = "Write"
    }

    private enum Inbox: Sendable {
        case listen(ListenInbox, FeedSubscription)
        case write(CallInbox<Google_Firestore_V1_WriteRequest>)
    }

    let kind: Kind
    let session: WebChannelSession
    let database: DatabaseID
    /// Its connections-registry entry; nil when the registry is not involved (tests).
    let entryID: String?
    let registry: ConnectionRegistry
    private let inbox: Inbox

    /// Starts the stream's engine; its responses go to `session` until the stream ends, and
    /// its end ends the session (an error is sent in-band first, as the SDK reads errors).
    init(kind: Kind, session: WebChannelSession, database: DatabaseID, entryID: String?, registry: ConnectionRegistry,
         backend: Backend, listenOptions: ListenOptions, forwarding: OwnerForwarding?, caller: Result<RulesCaller?, FiregateError>,
         texts: WebChannelTextCache) {
        self.kind = kind
        self.session = session
        self.database = database
        self.entryID = entryID
        self.registry = registry
        let documents = backend.documents.database(database)
        switch kind {
        case .listen:
            let subscription = documents.feed.subscribe(bufferLimit: listenOptions.bufferLimit)
            inbox = .listen(ListenInbox(subscription: subscription), subscription)
        case .write:
            inbox = .write(CallInbox())
        }
        let inbox = self.inbox
        let sink = WebChannelSink(session: session, registry: registry, entryID: entryID, texts: texts)
        Task { [session] in
            let status: FiregateError?
            switch caller {
            case .failure(let error):
                status = error
                if case .listen(_, let subscription) = inbox { subscription.cancel() }
            case .success(let caller):
                var sink = sink
                let counted = ListenCount(registry: registry, entryID: entryID)
                let timeline = entryID.map { backend.timelines.recorder(TimelineLane.connectionID($0)) }
                status = await FirestoreGRPCService.$caller.withValue(caller) { () async -> FiregateError? in
                    switch inbox {
                    case .listen(let requests, let subscription):
                        return await FirestoreListenCall.answer(first: nil, database: documents, backend: backend, inbox: requests,
                                                                subscription: subscription, access: caller,
                                                                listens: { counted.set($0) }, timeline: timeline, responses: &sink)
                    case .write(let requests):
                        return await FirestoreWriteCall(backend: backend, ticket: nil, forwarding: forwarding, timeline: timeline)
                            .answer(requests, responses: &sink)
                    }
                }
                counted.set(0)
            }
            if let status {
                session.end(.finished, last: WebChannelFraming.message(ErrorResponse.webChannel(status)))
            } else {
                session.end(.closed)
            }
            if let entryID { registry.close(entryID, reason: status?.message ?? "The client terminated the channel.") }
        }
    }

    /// Hands the client's messages (in map order) to the engine; a message that is not the
    /// stream's request type ends the stream INVALID_ARGUMENT.
    func deliver(_ messages: [String]) async {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        for message in messages {
            do {
                switch inbox {
                case .listen(let requests, _):
                    await requests.push(try Google_Firestore_V1_ListenRequest(jsonString: message, options: options))
                case .write(let requests):
                    await requests.push(try Google_Firestore_V1_WriteRequest(jsonString: message, options: options))
                }
            } catch {
                end(.invalidArgument("Invalid \(kind.rawValue)Request: \(error). The message was \(message.prefix(200))"))
                return
            }
        }
    }

    /// Ends the engine: nil for a client's terminate (nothing more is sent), else the error
    /// the stream ends with.
    func end(_ error: FiregateError?) {
        let status = error ?? .cancelled("The client terminated the channel.")
        switch inbox {
        case .listen(let requests, _): requests.end(status)
        case .write(let requests): Task { await requests.end(status) }
        }
    }
}

/// The session as a Firestore stream's response side: each message becomes one array,
/// delayed by the network switch's latency like a gRPC frame.
struct WebChannelSink: FirestoreStreamSink {
    let session: WebChannelSession
    let registry: ConnectionRegistry
    let entryID: String?
    let texts: WebChannelTextCache

    mutating func send(_ message: some SwiftProtobuf.Message) async throws {
        try await send(texts: [try texts.text(message)])
    }

    mutating func send<Message: SwiftProtobuf.Message>(all messages: [Message]) async throws {
        guard !messages.isEmpty else { return }
        try await send(texts: try messages.map { try texts.text($0) })
    }

    private func send(texts: [String]) async throws {
        if let entryID {
            let delay = registry.latency(entryID)
            if delay > .zero { try? await Task.sleep(for: delay) }
        }
        guard await session.send(texts) else { throw FiregateError.cancelled("The channel ended.") }
    }
}

/// A stream's open Listen targets, counted on its registry entry (gRPC calls' and WebChannel sessions').
final class ListenCount: Sendable {
    let registry: ConnectionRegistry
    let entryID: String?
    private let count = Mutex(0)

    init(registry: ConnectionRegistry, entryID: String?) {
        self.registry = registry
        self.entryID = entryID
    }

    func set(_ value: Int) {
        let delta = count.withLock { current -> Int in
            defer { current = value }
            return value - current
        }
        if let entryID, delta != 0 { registry.updateListens(entryID, by: delta) }
    }
}

/// Messages' JSON texts shared by sessions: a commit fanned out to a thousand pages listening
/// to the same document is the same message for each (their SDKs number targets alike), and
/// proto3 JSON costs several times the binary encoding that finds it here.
final class WebChannelTextCache: Sendable {
    private struct State {
        var texts: [[UInt8]: String] = [:]
        var order: [[UInt8]] = []
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int = 256) {
        self.capacity = capacity
    }

    func text(_ message: some SwiftProtobuf.Message) throws -> String {
        let key: [UInt8] = try message.serializedBytes()
        if let hit = state.withLock({ $0.texts[key] }) { return hit }
        let text = try message.jsonString()
        state.withLock { state in
            guard state.texts.updateValue(text, forKey: key) == nil else { return }
            state.order.append(key)
            if state.order.count > capacity { state.texts[state.order.removeFirst()] = nil }
        }
        return text
    }
}
