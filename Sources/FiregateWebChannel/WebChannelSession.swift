import Synchronization

/// One WebChannel session: one Firestore stream of one page (docs/webchannel.md). It owns the
/// arrays going to the client (`WebChannelOutbox`), the order of the messages coming from it
/// (`WebChannelForwardOrder`) and which back-channel request, if any, is writing. The stream's
/// engine sends through `send`, which waits while the client has too much unacknowledged —
/// so a page that stops reading holds its stream back instead of growing the server's memory —
/// or, when it is not a task (the Listen engine), checks `hasRoom` and `queue`s.
public final class WebChannelSession: Sendable {
    /// How a session ended.
    public enum Ending: Sendable, Equatable {
        /// The client terminated it, or it expired unused.
        case closed
        /// Its stream ended (an in-band error, a stop): the last arrays may still be read.
        case finished
    }

    /// What a back channel finds when it looks.
    public enum Poll: Sendable, Equatable {
        case arrays([WebChannelArray])
        /// Nothing after what it wrote.
        case nothing
        /// A newer back-channel request took over.
        case superseded
        /// The session ended and everything was written.
        case ended
    }

    private struct State {
        var outbox = WebChannelOutbox()
        var forward = WebChannelForwardOrder()
        var ending: Ending?
        var generation = 0
        var backChannel: (generation: Int, bell: WebChannelBell)?
        var lastWritten = 0
        /// Senders waiting for room; resumed with nil, they look again.
        var producers: [CheckedContinuation<Bool?, Never>] = []
        var lastSeen: ContinuousClock.Instant
    }

    public let id: String
    /// Characters the client may leave unacknowledged before `send` waits.
    public let outstandingLimit: Int
    private let state: Mutex<State>

    public init(id: String, outstandingLimit: Int = 4 << 20) {
        self.id = id
        self.outstandingLimit = outstandingLimit
        state = Mutex(State(lastSeen: .now))
    }

    // MARK: The client's side

    /// A forward POST's messages: those now deliverable, in map order.
    public func receive(offset: Int, messages: [String]) throws(WebChannelOrderError) -> [String] {
        try state.withLock { (state: inout State) throws(WebChannelOrderError) -> [String] in
            state.lastSeen = .now
            return try state.forward.accept(offset: offset, messages: messages)
        }
    }

    /// The client processed every array up to `id` (its `AID`).
    public func acknowledge(through id: Int) {
        let (waiting, bell) = state.withLock { state -> ([CheckedContinuation<Bool?, Never>], WebChannelBell?) in
            state.lastSeen = .now
            let before = state.outbox.outstanding
            state.outbox.acknowledge(through: id)
            guard state.outbox.outstanding <= outstandingLimit else { return ([], nil) }
            defer { state.producers.removeAll() }
            // A back channel that stopped taking commits for want of room takes them again.
            return (state.producers, before > outstandingLimit ? state.backChannel?.bell : nil)
        }
        for producer in waiting { producer.resume(returning: nil) }
        bell?.ring()
    }

    /// Opens a back channel after acknowledging `id`; a back channel already open is superseded
    /// (a client has one at a time: a new one means the old one is gone).
    public func openBackChannel(acknowledging id: Int) -> WebChannelBackChannel {
        let (wakeups, doorbell) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        return openBackChannel(acknowledging: id, bell: .stream(doorbell), wakeups: wakeups)
    }

    /// Opens a back channel that is not a task: `wake` is called (from any thread) when there
    /// may be something to write, and when it is superseded or the session ends.
    public func openBackChannel(acknowledging id: Int, wake: @escaping @Sendable () -> Void) -> WebChannelBackChannel {
        openBackChannel(acknowledging: id, bell: .call(wake), wakeups: nil)
    }

    private func openBackChannel(acknowledging id: Int, bell: WebChannelBell, wakeups: AsyncStream<Void>?) -> WebChannelBackChannel {
        acknowledge(through: id)
        let (generation, previous) = state.withLock { state in
            state.generation += 1
            defer { state.backChannel = (state.generation, bell) }
            return (state.generation, state.backChannel?.bell)
        }
        previous?.ring()
        return WebChannelBackChannel(session: self, generation: generation, after: id, wakeups: wakeups ?? AsyncStream { $0.finish() })
    }

    // MARK: The stream's side

    /// Queues Firestore messages (their JSON texts) for the client, after waiting while the
    /// client leaves more than `outstandingLimit` unacknowledged. False once the session ended.
    @discardableResult
    public func send(_ messages: [String]) async -> Bool {
        guard await waitForRoom() else { return false }
        return queue(messages.map(WebChannelMessage.init(json:)))
    }

    /// Returns once the client leaves at most `outstandingLimit` unacknowledged: true, or false
    /// once the session ended.
    public func waitForRoom() async -> Bool {
        while true {
            let room = await withCheckedContinuation { (continuation: CheckedContinuation<Bool?, Never>) in
                let ready = state.withLock { state -> Bool? in
                    if state.ending != nil { return false }
                    if state.outbox.outstanding <= outstandingLimit { return true }
                    state.producers.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
            if let room { return room }
        }
    }

    /// Whether the client leaves at most `outstandingLimit` unacknowledged.
    public var hasRoom: Bool { state.withLock { $0.outbox.outstanding <= outstandingLimit } }

    /// Queues Firestore messages now, room or not (the caller looked at `hasRoom`); false once
    /// the session ended.
    /// `sparing`: a back channel about to look, not rung when it is the one reading (it would
    /// only look twice).
    @discardableResult
    public func queue(_ messages: [WebChannelMessage], sparing reader: WebChannelBackChannel? = nil) -> Bool {
        guard !messages.isEmpty else { return state.withLock { $0.ending == nil } }
        let (queued, bell) = state.withLock { state -> (Bool, WebChannelBell?) in
            guard state.ending == nil else { return (false, nil) }
            for message in messages { state.outbox.append(message.payload, length: message.length) }
            // The generation first: the reader spared (a fan-out's case) copies no bell.
            guard let generation = state.backChannel?.generation, generation != reader?.generation else { return (true, nil) }
            return (true, state.backChannel?.bell)
        }
        bell?.ring()
        return queued
    }

    /// Ends the session. A `last` payload (an in-band error, `["stop"]`) is queued first, for
    /// the back channel to deliver before it ends; `.closed` sessions deliver nothing more.
    public func end(_ ending: Ending, last payload: String? = nil) {
        let (bell, producers) = state.withLock { state -> (WebChannelBell?, [CheckedContinuation<Bool?, Never>]) in
            guard state.ending == nil else { return (nil, []) }
            state.ending = ending
            if let payload, ending == .finished { state.outbox.append(payload) }
            defer { state.producers.removeAll() }
            return (state.backChannel?.bell, state.producers)
        }
        bell?.ring()
        for producer in producers { producer.resume(returning: nil) }
    }

    /// Wakes whichever back channel is reading now (news it should look for, such as commits
    /// waiting for the stream's engine).
    public func ring() {
        state.withLock { $0.backChannel?.bell }?.ring()
    }

    public var ending: Ending? { state.withLock { $0.ending } }

    /// What a forward POST answers: whether a back channel is open, the last array id written
    /// to one and the characters not yet acknowledged.
    public var forwardAnswer: (backChannelOpen: Bool, lastArrayID: Int, outstanding: Int) {
        state.withLock { ($0.backChannel != nil, $0.lastWritten, $0.outbox.outstanding) }
    }

    /// When the client was last heard from, and whether a back channel is open now.
    public var activity: (lastSeen: ContinuousClock.Instant, backChannelOpen: Bool) {
        state.withLock { ($0.lastSeen, $0.backChannel != nil) }
    }

    public var outstanding: Int { state.withLock { $0.outbox.outstanding } }

    /// Whether arrays after `id` wait to be read.
    public func hasArrays(after id: Int) -> Bool {
        state.withLock { $0.outbox.lastID > id }
    }

    // MARK: Back channels

    fileprivate func poll(_ generation: Int, after id: Int, limit: Int) -> Poll {
        state.withLock { state in
            state.lastSeen = .now
            guard state.backChannel?.generation == generation else { return .superseded }
            if state.ending == .closed { return .ended }
            let arrays = state.outbox.arrays(after: id, limit: limit)
            if !arrays.isEmpty { return .arrays(arrays) }
            return state.ending == nil ? .nothing : .ended
        }
    }

    /// Whether arrays after `id` wait to be read.
    fileprivate func wrote(_ generation: Int, through id: Int) -> Bool {
        state.withLock { state in
            if state.backChannel?.generation == generation { state.lastWritten = max(state.lastWritten, id) }
            return state.outbox.lastID > id
        }
    }

    fileprivate func appendNoop(_ generation: Int) {
        state.withLock { state in
            if state.backChannel?.generation == generation, state.ending == nil { state.outbox.append(WebChannelFraming.noop) }
        }
    }

    fileprivate func ring(_ generation: Int) {
        state.withLock { $0.backChannel?.generation == generation ? $0.backChannel?.bell : nil }?.ring()
    }

    fileprivate func close(_ generation: Int) {
        let bell = state.withLock { state -> WebChannelBell? in
            state.lastSeen = .now
            guard state.backChannel?.generation == generation else { return nil }
            defer { state.backChannel = nil }
            return state.backChannel?.bell
        }
        bell?.close()
    }
}

/// How a session reaches the back channel reading it: a writer task's doorbell, or the call a
/// stream served on its connection's event loop gave.
enum WebChannelBell: Sendable {
    case stream(AsyncStream<Void>.Continuation)
    case call(@Sendable () -> Void)

    func ring() {
        switch self {
        case .stream(let doorbell): doorbell.yield()
        case .call(let wake): wake()
        }
    }

    /// The back channel is over; a call's stream learns it when it polls.
    func close() {
        switch self {
        case .stream(let doorbell): doorbell.finish()
        case .call: break
        }
    }
}

/// One back-channel request's view of its session: it is woken when arrays arrive, the
/// session ends or a newer request supersedes it, and writes what `poll` hands it.
public struct WebChannelBackChannel: Sendable {
    let session: WebChannelSession
    let generation: Int
    /// The id of the last array this request wrote (or the client acknowledged).
    public private(set) var written: Int
    /// Rings when there may be something to write (a writer task's; a back channel opened
    /// with a wake call has it finished).
    public let wakeups: AsyncStream<Void>

    init(session: WebChannelSession, generation: Int, after id: Int, wakeups: AsyncStream<Void>) {
        self.session = session
        self.generation = generation
        self.written = id
        self.wakeups = wakeups
    }

    /// The arrays to write next, at most about `limit` characters.
    public func poll(limit: Int = 64 * 1024) -> WebChannelSession.Poll {
        session.poll(generation, after: written, limit: limit)
    }

    /// Records that the arrays through `id` were written; true when more wait to be read.
    @discardableResult
    public mutating func wrote(through id: Int) -> Bool {
        written = id
        return session.wrote(generation, through: id)
    }

    /// Queues a keep-alive (it takes an id like any array).
    public func keepAlive() { session.appendNoop(generation) }

    /// Wakes the writer (a keep-alive timer's tick).
    public func ring() { session.ring(generation) }

    /// The request is over.
    public func close() { session.close(generation) }
}
