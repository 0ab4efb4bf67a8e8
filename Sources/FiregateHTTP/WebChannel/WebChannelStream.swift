import FiregateBackend
import FiregateModel
import FiregateProto
import FiregateWebChannel
import SwiftProtobuf
import Synchronization

/// The Firestore stream behind one WebChannel session: Listen or Write, with the engines gRPC
/// uses — Listen's `ListenTargets` in a `WebChannelListenEngine`, run by the session's requests
/// with no task of its own; Write's `FirestoreWriteCall.answer` in a task with the session as
/// its sink. Messages arrive as proto3 JSON texts (the REST API's JSON) and leave the same way.
final class WebChannelStream: Sendable {
    enum Kind: String, Sendable {
        case listen = "Listen", write = "Write"
    }

    private enum Engine: Sendable {
        case listen(WebChannelListenEngine)
        case write(CallInbox<Google_Firestore_V1_WriteRequest>)
    }

    let kind: Kind
    let session: WebChannelSession
    let database: DatabaseID
    /// Its connections-registry entry; nil when the registry is not involved (tests).
    let entryID: String?
    let registry: ConnectionRegistry
    private let engine: Engine

    /// Starts the stream's engine; its responses go to `session` until the stream ends, and
    /// its end ends the session (an error is sent in-band first, as the SDK reads errors).
    init(kind: Kind, session: WebChannelSession, database: DatabaseID, entryID: String?, registry: ConnectionRegistry,
         backend: Backend, listenOptions: ListenOptions, forwarding: OwnerForwarding?, caller: Result<RulesCaller?, FiregateError>,
         texts: WebChannelTextCache, fanOut: WebChannelFanOut) {
        self.kind = kind
        self.session = session
        self.database = database
        self.entryID = entryID
        self.registry = registry
        let documents = backend.documents.database(database)
        let timeline = entryID.map { backend.timelines.recorder(TimelineLane.connectionID($0)) }
        let finish = { @Sendable (status: FiregateError?) in
            WebChannelStream.finish(session, status: status, entryID: entryID, registry: registry)
        }
        switch kind {
        case .listen:
            let engine = WebChannelListenEngine(session: session, database: documents, backend: backend, bufferLimit: listenOptions.bufferLimit,
                                                caller: (try? caller.get()) ?? nil, timeline: timeline,
                                                counted: ListenCount(registry: registry, entryID: entryID), texts: texts, fanOut: fanOut,
                                                finish: finish)
            self.engine = .listen(engine)
            if case .failure(let error) = caller { engine.end(error) }
        case .write:
            let requests = CallInbox<Google_Firestore_V1_WriteRequest>()
            engine = .write(requests)
            let sink = WebChannelSink(session: session, registry: registry, entryID: entryID, texts: texts)
            Task {
                switch caller {
                case .failure(let error): finish(error)
                case .success(let caller):
                    var sink = sink
                    finish(await FirestoreGRPCService.$caller.withValue(caller) {
                        await FirestoreWriteCall(backend: backend, ticket: nil, forwarding: forwarding, timeline: timeline)
                            .answer(requests, responses: &sink)
                    })
                }
            }
        }
    }

    /// The end of the stream, told to the client and the registry.
    private static func finish(_ session: WebChannelSession, status: FiregateError?, entryID: String?, registry: ConnectionRegistry) {
        if let status {
            session.end(.finished, last: WebChannelFraming.message(ErrorResponse.webChannel(status)))
        } else {
            session.end(.closed)
        }
        if let entryID { registry.close(entryID, reason: status?.message ?? "The client terminated the channel.") }
    }

    /// Hands the client's messages (in map order) to the engine; a message that is not the
    /// stream's request type ends the stream INVALID_ARGUMENT. A Listen waits while the client
    /// leaves too much unread, as a gRPC stream's flow control would hold it.
    func deliver(_ messages: [String]) async {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        switch engine {
        case .listen(let engine):
            var requests: [Google_Firestore_V1_ListenRequest] = []
            var bad: FiregateError?
            for message in messages {
                do {
                    requests.append(try Google_Firestore_V1_ListenRequest(jsonString: message, options: options))
                } catch {
                    bad = WebChannelStream.invalid(.listen, message, error)
                    break
                }
            }
            if !requests.isEmpty, await session.waitForRoom() { engine.handle(requests) }
            if let bad { engine.end(bad) }
        case .write(let requests):
            for message in messages {
                do {
                    await requests.push(try Google_Firestore_V1_WriteRequest(jsonString: message, options: options))
                } catch {
                    end(WebChannelStream.invalid(.write, message, error))
                    return
                }
            }
        }
    }

    private static func invalid(_ kind: Kind, _ message: String, _ error: any Error) -> FiregateError {
        .invalidArgument("Invalid \(kind.rawValue)Request: \(error). The message was \(message.prefix(200))")
    }

    /// Takes the database's commits into the session, for a back channel about to look.
    /// A Write stream's task sends on its own.
    func pump(for reader: WebChannelBackChannel? = nil) {
        if case .listen(let engine) = engine { engine.pump(for: reader) }
    }

    /// Ends the engine: nil for a client's terminate (nothing more is sent), else the error
    /// the stream ends with.
    func end(_ error: FiregateError?) {
        switch engine {
        case .listen(let engine): engine.end(error)
        case .write(let requests):
            let status = error ?? .cancelled("The client terminated the channel.")
            Task { await requests.end(status) }
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
        try await send([try texts.text(message)])
    }

    mutating func send<Message: SwiftProtobuf.Message>(all messages: [Message]) async throws {
        guard !messages.isEmpty else { return }
        try await send(try messages.map { try texts.text($0) })
    }

    private func send(_ messages: [WebChannelMessage]) async throws {
        if let entryID {
            let delay = registry.latency(entryID)
            if delay > .zero { try? await Task.sleep(for: delay) }
        }
        guard await session.waitForRoom(), session.queue(messages) else { throw FiregateError.cancelled("The channel ended.") }
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
/// proto3 JSON costs several times the binary encoding that finds it here. A whole document's
/// change from a commit is found without encoding, by its `CommittedChangeKey`.
final class WebChannelTextCache: Sendable {
    /// What determines a whole document's change message: the document's version at a commit
    /// of a database (its sequence and time), and the target it is sent for.
    struct CommittedChangeKey: Hashable, Sendable {
        let database: DatabaseID
        let sequence: Int64
        let commitTime: Timestamp
        let name: String
        let target: Int32
    }

    private struct State {
        var texts: [[UInt8]: WebChannelMessage] = [:]
        var order: [[UInt8]] = []
        var changes: [CommittedChangeKey: WebChannelMessage] = [:]
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int = 256) {
        self.capacity = capacity
    }

    func text(_ message: some SwiftProtobuf.Message) throws -> WebChannelMessage {
        let key: [UInt8] = try message.serializedBytes()
        if let hit = state.withLock({ $0.texts[key] }) { return hit }
        let text = WebChannelMessage(json: try message.jsonString())
        state.withLock { state in
            guard state.texts.updateValue(text, forKey: key) == nil else { return }
            state.order.append(key)
            if state.order.count > capacity { state.texts[state.order.removeFirst()] = nil }
        }
        return text
    }

    /// `message`'s text, found by `key` (which must determine it).
    func text(_ message: some SwiftProtobuf.Message, key: CommittedChangeKey) throws -> WebChannelMessage {
        if let hit = state.withLock({ $0.changes[key] }) { return hit }
        let text = WebChannelMessage(json: try message.jsonString())
        state.withLock { state in
            // Commits move on: the oldest entries are of no more use, so all go at once.
            if state.changes.count >= capacity { state.changes.removeAll(keepingCapacity: true) }
            state.changes[key] = text
        }
        return text
    }
}
