import DequeModule
import FiregateModel
import FiregateRules
import Synchronization

/// One judged request: who asked, on which surface, what was decided, and every evaluation
/// behind it (a commit has one per write, a batch get one per document).
public struct RulesDecisionRecord: Sendable {
    public enum Outcome: String, Sendable, CaseIterable {
        case allow, deny, error
    }

    public enum Service: String, Sendable {
        case firestore, database
    }

    /// One rules evaluation: a Firestore method on a document or collection, or a tree read or write.
    public struct Evaluation: Sendable {
        public enum Detail: Sendable {
            /// What the evaluation was given and what it read: it is made again for its trace.
            case firestore(FirestoreEvaluationInput, accesses: [RulesDocumentAccess])
            case realtime(RealtimeRulesDecision)
        }

        public let method: String
        public let path: String
        public let allowed: Bool
        /// Denied because every rule tried failed to evaluate (rather than answering false).
        public let errored: Bool
        public let detail: Detail

        public init(method: String, path: String, detail: Detail, allowed: Bool, errored: Bool) {
            (self.method, self.path, self.detail, self.allowed, self.errored) = (method, path, detail, allowed, errored)
        }

        /// A Firestore evaluation, kept as what it was given and read.
        init(method: String, path: String, _ decision: FirestoreRulesDecision, _ input: FirestoreEvaluationInput) {
            self.init(method: method, path: path, detail: .firestore(input, accesses: decision.accesses), allowed: decision.allowed,
                      errored: !decision.allowed && Evaluation.errored(decision.outcomes.map(\.result)))
        }

        /// A tree evaluation, kept whole (its outcomes are its trace).
        init(method: String, path: String, _ decision: RealtimeRulesDecision) {
            self.init(method: method, path: path, detail: .realtime(decision), allowed: decision.allowed,
                      errored: !decision.allowed && Evaluation.errored(decision.outcomes.map(\.result)))
        }

        static func errored(_ results: [String]) -> Bool {
            !results.isEmpty && results.allSatisfy { $0 != "true" && $0 != "false" }
        }
    }

    public let id: String
    public let time: Timestamp
    public let service: Service
    /// The project (documents) or the namespace (tree).
    public let scope: String
    public let caller: RulesCaller
    public let outcome: Outcome
    /// The denial as the surface reports it (empty when allowed).
    public let message: String
    public let evaluations: [Evaluation]
    /// The rules source the decision was made with, for the trace's lines.
    public let source: String
}

/// The decisions made since start: the last `capacity` kept for traces, every one counted by
/// outcome for `/metrics`, and each passed to subscribers (the decisions stream).
public final class RulesDecisionLog: Sendable {
    public static let capacity = 2_000

    struct State {
        var records = Deque<RulesDecisionRecord>()
        var nextID = 1
        var counts: [RulesDecisionRecord.Outcome: Int] = [:]
        var subscribers: [Int: AsyncStream<RulesDecisionRecord>.Continuation] = [:]
        var nextSubscriber = 0
    }

    private let state = Mutex(State())
    let clock: ServerClock

    init(clock: ServerClock) {
        self.clock = clock
    }

    /// Records a decision and returns it (with its id).
    @discardableResult
    func record(service: RulesDecisionRecord.Service, scope: String, caller: RulesCaller, message: String,
                evaluations: [RulesDecisionRecord.Evaluation], source: String) -> RulesDecisionRecord {
        let allowed = evaluations.allSatisfy(\.allowed)
        let time = clock.now()
        let (record, subscribers, evicted) = state.withLock { state in
            let record = RulesDecisionRecord(id: String(state.nextID), time: time, service: service, scope: scope, caller: caller,
                                             outcome: allowed ? .allow : (evaluations.filter { !$0.allowed }.allSatisfy(\.errored) ? .error : .deny),
                                             message: allowed ? "" : message, evaluations: evaluations, source: source)
            state.nextID += 1
            state.counts[record.outcome, default: 0] += 1
            state.records.append(record)
            // The oldest record is freed after the lock is released: it holds a whole request.
            let evicted = state.records.count > RulesDecisionLog.capacity ? state.records.removeFirst() : nil
            return (record, state.subscribers.isEmpty ? [] : Array(state.subscribers.values), evicted)
        }
        _ = consume evicted
        for subscriber in subscribers { subscriber.yield(record) }
        return record
    }

    public func decision(_ id: String) -> RulesDecisionRecord? {
        state.withLock { state in state.records.first { $0.id == id } }
    }

    /// The kept decisions, oldest first.
    public var recent: [RulesDecisionRecord] { state.withLock { Array($0.records) } }

    /// The newest refusal of a write sent by an edge client: the decision its rejection links to.
    public func latestRefusal(client: String) -> String? {
        state.withLock { state in state.records.last { $0.caller.client == client && $0.outcome != .allow }?.id }
    }

    public var counts: [RulesDecisionRecord.Outcome: Int] { state.withLock { $0.counts } }

    /// Every decision made from now on; the stream ends when its consumer stops.
    public func subscribe() -> AsyncStream<RulesDecisionRecord> {
        let (stream, continuation) = AsyncStream.makeStream(of: RulesDecisionRecord.self, bufferingPolicy: .bufferingNewest(1_000))
        let id = state.withLock { state in
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }
}

/// Who asks, as the rules and the traces see it: the identity, the surface the request came in
/// on, and the edge client that sent it (if one did).
public struct RulesCaller: Sendable {
    public let identity: CallIdentity
    /// `rest`, `grpc`, `sse`, `websocket`, `edge`.
    public let surface: String
    public let client: String?

    /// `request.auth` / `auth` as rules see this identity.
    public let auth: RulesValue

    public init(identity: CallIdentity, surface: String, client: String? = nil) {
        self.init(identity: identity, surface: surface, client: client, auth: RulesCaller.auth(of: identity))
    }

    init(identity: CallIdentity, surface: String, client: String?, auth: RulesValue) {
        self.identity = identity
        self.surface = surface
        self.client = client
        self.auth = auth
    }

    static func auth(of identity: CallIdentity) -> RulesValue {
        if case .user(_, let claims) = identity { return RulesValue.auth(claims: claims) }
        return .null
    }

    var claims: JSON? {
        if case .user(_, let claims) = identity { return claims }
        return nil
    }
}

/// What a Firestore evaluation was given: with the documents it read (kept in its decision),
/// enough to evaluate it again. Decisions keep this rather than every subexpression's value,
/// which a trace computes on demand.
public struct FirestoreEvaluationInput: Sendable {
    public let ruleset: FirestoreRuleset
    public let request: FirestoreRulesRequest
    /// A list's query (the decision was made per disjunct).
    public let query: FirestoreRulesQuery?
    public let limits: RulesLimits

    /// The decision made again from what it read, with every subexpression's value.
    public func replay(_ accesses: [RulesDocumentAccess]) -> FirestoreRulesDecision {
        let reader = RecordedDocumentReader(accesses)
        if let query { return ruleset.decideList(request, query: query, reader: reader, limits: limits, recordsVisits: true) }
        return ruleset.decide(request, reader: reader, limits: limits, recordsVisits: true)
    }
}
