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
            case firestore(FirestoreRulesDecision, request: RulesValue, resource: RulesValue)
            case realtime(RealtimeRulesDecision)
        }

        public let method: String
        public let path: String
        public let detail: Detail

        public var allowed: Bool {
            switch detail {
            case .firestore(let decision, _, _): decision.allowed
            case .realtime(let decision): decision.allowed
            }
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
        let (record, subscribers) = state.withLock { state in
            let record = RulesDecisionRecord(id: String(state.nextID), time: time, service: service, scope: scope, caller: caller,
                                             outcome: allowed ? .allow : (RulesDecisionLog.errored(evaluations) ? .error : .deny),
                                             message: allowed ? "" : message, evaluations: evaluations, source: source)
            state.nextID += 1
            state.counts[record.outcome, default: 0] += 1
            state.records.append(record)
            if state.records.count > RulesDecisionLog.capacity { state.records.removeFirst() }
            return (record, Array(state.subscribers.values))
        }
        for subscriber in subscribers { subscriber.yield(record) }
        return record
    }

    /// Denied because every rule tried failed to evaluate (rather than answering false).
    static func errored(_ evaluations: [RulesDecisionRecord.Evaluation]) -> Bool {
        let results: [String] = evaluations.filter { !$0.allowed }.flatMap { evaluation -> [String] in
            switch evaluation.detail {
            case .firestore(let decision, _, _): decision.outcomes.map(\.result)
            case .realtime(let decision): decision.outcomes.map(\.result)
            }
        }
        return !results.isEmpty && results.allSatisfy { $0 != "true" && $0 != "false" }
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
    public var identity: CallIdentity
    /// `rest`, `grpc`, `sse`, `websocket`, `edge`.
    public var surface: String
    public var client: String?

    public init(identity: CallIdentity, surface: String, client: String? = nil) {
        self.identity = identity
        self.surface = surface
        self.client = client
    }

    var claims: JSON? {
        if case .user(_, let claims) = identity { return claims }
        return nil
    }
}
