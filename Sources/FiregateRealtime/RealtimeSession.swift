import DequeModule
import FiregateBackend
import FiregateModel
import Synchronization

/// Where a session's messages go: one WebSocket connection.
public protocol RealtimeTransport: Sendable {
    /// Sends one text message.
    func send(_ text: [UInt8])
    /// Ends the connection, with `reason` in its close frame.
    func close(reason: String)
}

/// What a session tells the one who keeps track of connections.
public struct RealtimeSessionHooks: Sendable {
    /// The number of open listens changed.
    public var listensChanged: @Sendable (Int) -> Void = { _ in }
    /// The connection authenticated as someone else.
    public var identityChanged: @Sendable (CallIdentity) -> Void = { _ in }
    /// An onDisconnect operation ran, after the connection closed.
    public var onDisconnectRan: @Sendable (OnDisconnectOperation) -> Void = { _ in }
    /// The registered onDisconnect operations are now these (none once they ran or were
    /// forgotten): replicas keep them in the shared store for when this one dies.
    public var onDisconnectChanged: (@Sendable ([OnDisconnectOperation]) -> Void)?
    /// The connection's timeline lane: its listens, writes, onDisconnect operations and the
    /// data pushed to it.
    public var timeline: TimelineRecorder?

    public init() {}
}

/// Bounds on what one connection may make the server hold.
public struct RealtimeLimits: Sendable {
    /// Largest message, joined from its pieces: a write's limit plus room for its envelope.
    public var maxMessageBytes = TreeLimits.maxWriteBytes + 64 * 1024
    /// Requests received and not answered yet; a client past it is disconnected.
    public var maxQueuedRequests = 4096

    public init() {}
}

/// One client connection speaking the Realtime Database protocol (docs/wire/realtime-database.md):
/// the one owner of its listens, its onDisconnect operations and its identity.
///
/// Requests are answered one at a time in the order they came, each exactly once; the data a
/// request causes (a listen's first value, a write's effect on the connection's own listens)
/// is pushed before its reply, as the SDK relies on. When the connection closes, what it sent
/// before is still answered (into the void), then its onDisconnect operations run, once.
public final class RealtimeSession: Sendable {
    enum Work: Sendable {
        case request(number: Int64, action: String, body: JSON)
        case disconnect
        /// Answer nothing before `previous` has run its onDisconnect operations (`ls`).
        case after(previous: RealtimeSession)
    }

    typealias Listen = RealtimeListens.Listen

    struct State {
        var assembler: RealtimeMessageAssembler
        var inbox: Deque<Work> = []
        var draining = false
        var identity: CallIdentity
        var listens = RealtimeListens()
        var nextGeneration = 0
        var onDisconnect = OnDisconnectList()
        var closed = false
        /// Whether the onDisconnect operations have run, and who waits for them.
        var disconnected = false
        var disconnectWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let tree: TreeBackend
    public let namespace: String
    let transport: any RealtimeTransport
    let hooks: RealtimeSessionHooks
    let limits: RealtimeLimits
    let state: Mutex<State>
    /// The rules that judge this connection's requests (nil: none).
    let rules: SecurityRules?

    public init(tree: TreeBackend, namespace: String, identity: CallIdentity, transport: any RealtimeTransport,
                hooks: RealtimeSessionHooks = RealtimeSessionHooks(), limits: RealtimeLimits = RealtimeLimits(), rules: SecurityRules? = nil) {
        self.tree = tree
        self.rules = rules
        self.namespace = namespace
        self.transport = transport
        self.hooks = hooks
        self.limits = limits
        state = Mutex(State(assembler: RealtimeMessageAssembler(maxBytes: limits.maxMessageBytes), identity: identity))
    }

    public var identity: CallIdentity { state.withLock { $0.identity } }

    /// The judge of a request made now, with the connection's current identity.
    func judge() -> TreeRulesJudge? {
        rules?.treeJudge(namespace, caller: caller)
    }

    /// Who makes a request now: the connection's current identity, on the socket surface (also
    /// how a replica not owning the namespace sends its writes to the owner).
    var caller: RulesCaller { RulesCaller(identity: identity, surface: "websocket") }
    /// Who is the admin on this server (the emulators' `owner` when no rules object is given).
    var admin: AdminCredential { rules?.admin ?? AdminCredential(token: nil) }
    public var listenCount: Int { state.withLock { $0.listens.count } }

    /// Sends the hello that opens every connection.
    public func start(serverMillis: Int64, host: String, sessionID: String) {
        send(RealtimeOutbound.hello(serverMillis: serverMillis, host: host, sessionID: sessionID))
    }

    /// Takes one WebSocket text message from the client.
    public func receive(_ text: [UInt8]) {
        let assembled = state.withLock { state -> RealtimeMessageAssembler.Result in
            state.closed ? .pending : state.assembler.add(text)
        }
        switch assembled {
        case .pending: return
        case .failure(let reason): transport.close(reason: reason)
        case .message(let message): take(RealtimeInbound(message))
        }
    }

    private func take(_ inbound: RealtimeInbound) {
        switch inbound {
        case .control(type: "p", data: _):
            send(RealtimeOutbound.pong)
        case .control:
            // `n` and `a` belong to upgrading long polling, which a WebSocket never does.
            break
        case .unanswerable(let reason):
            send(RealtimeOutbound.serverError(reason))
        case .malformed(let reason):
            transport.close(reason: reason)
        case .request(let number, let action, let body):
            enqueue(.request(number: number, action: action, body: body))
        }
    }

    private func enqueue(_ work: Work) {
        enum Next { case nothing, drain, overflow }
        let next = state.withLock { state -> Next in
            if case .request = work {
                guard !state.closed else { return .nothing }
                guard state.inbox.count < limits.maxQueuedRequests else { return .overflow }
            }
            state.inbox.append(work)
            guard !state.draining else { return .nothing }
            state.draining = true
            return .drain
        }
        switch next {
        case .nothing: break
        case .drain: Task { await self.drain() }
        case .overflow: transport.close(reason: "More than \(limits.maxQueuedRequests) requests are waiting for their replies.")
        }
    }

    /// Answers what waits, in order; only one drain runs at a time.
    private func drain() async {
        while let work = state.withLock({ state -> Work? in
            if let work = state.inbox.popFirst() { return work }
            // An idle socket keeps no queue storage.
            state.inbox = []
            state.draining = false
            return nil
        }) {
            switch work {
            case .request(let number, let action, let body):
                await answer(number, action: action, body: body)
            case .disconnect:
                await runDisconnect()
            case .after(let previous):
                await previous.disconnected()
            }
        }
    }

    func send(_ message: [UInt8]) {
        for piece in RealtimeFraming.split(message) { transport.send(piece) }
    }

    // MARK: Closing

    /// The connection closed, for any reason: what was received is still answered, then the
    /// listens end and the onDisconnect operations run, exactly once.
    public func connectionClosed() {
        let first = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        if first { enqueue(.disconnect) }
    }

    /// The SDK reconnected naming this session as its last one (`ls`): it ends now, its
    /// onDisconnect operations run, and `successor` answers nothing before they have — so
    /// an old presence write cannot land after the new connection's.
    public func supersede(by successor: RealtimeSession) {
        successor.enqueue(.after(previous: self))
        transport.close(reason: "The client reconnected with a new session.")
        connectionClosed()
    }

    /// Returns once the connection has closed and its onDisconnect operations have run.
    func disconnected() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.disconnected { return true }
                state.disconnectWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Forgets the onDisconnect operations (the emulator was reset: they must not write into it).
    public func forgetOnDisconnect() {
        state.withLock { $0.onDisconnect.removeAll() }
        hooks.onDisconnectChanged?([])
    }

    private func runDisconnect() async {
        let (subscriptions, operations) = state.withLock { state in
            defer { state.listens.removeAll() }
            return (state.listens.subscriptions, state.onDisconnect.takeRegistered())
        }
        // Claimed here before they run, so no other replica runs them too.
        if !operations.isEmpty { hooks.onDisconnectChanged?([]) }
        for subscription in subscriptions { await tree.unsubscribe(subscription) }
        if !subscriptions.isEmpty { hooks.listensChanged(0) }
        for operation in operations {
            // Server values resolve now, at execution; an operation the tree refuses is skipped.
            guard let request = try? operation.request() else { continue }
            // Judged again as it fires, with the identity the connection had last (B7).
            if (try? await tree.write(namespace: namespace, request, judge: judge(), forwardingAs: caller)) != nil {
                hooks.onDisconnectRan(operation)
                hooks.timeline?.onDisconnect(registered: false, path: operation.path.description, op: operation.name)
            }
        }
        let waiters = state.withLock { state in
            state.disconnected = true
            defer { state.disconnectWaiters = [] }
            return state.disconnectWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Pushes

    /// A frame of one of this connection's listens, straight from the namespace, in its order.
    func deliver(_ frame: TreeStreamFrame, key: TreeStreamKey, generation: Int, tag: Int64?) {
        if frame.kind == .cancel {
            let revoked = state.withLock { state -> Listen? in
                guard let listen = state.listens[key], listen.generation == generation, listen.subscription != nil else { return nil }
                state.listens.removeValue(forKey: key)
                return listen
            }
            guard let revoked else { return }
            send(RealtimeOutbound.listenRevoked(path: key.path, query: revoked.query))
            hooks.listensChanged(listenCount)
            return
        }
        guard let update = frame.update else { return }
        hooks.timeline?.snapshot(key.path.description, fromCache: nil, hasPendingWrites: nil, documents: nil, changes: 1,
                                 changed: [TimelineChange("changed", key.path.description)])
        // Untagged listens of one location and format get the same bytes: encoded once per frame.
        guard let tag else { return send(frame.derivedEncoding { RealtimeOutbound.push(update, at: key.path, tag: nil) }) }
        send(RealtimeOutbound.push(update, at: key.path, tag: tag))
    }

    /// Auth revoked by the test: the connection is unauthenticated from now on, and the SDK,
    /// told with `ac`, drops its token and reconnects.
    public func revokeAuth(status: String, reason: String) {
        state.withLock { $0.identity = .unauthenticated }
        hooks.identityChanged(.unauthenticated)
        send(RealtimeOutbound.authRevoked(status: status, reason: reason))
    }

    /// A security debug line (`sd`), which the SDK prints.
    public func securityDebug(_ message: String) {
        send(RealtimeOutbound.securityDebug(message))
    }
}
