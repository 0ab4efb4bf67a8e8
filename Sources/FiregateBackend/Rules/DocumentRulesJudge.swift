import FiregateModel
import FiregateRules
import Synchronization

/// Judges one caller's requests to one database against its project's rules (docs/wire/
/// security-rules.md: Methods, request and resource, Access calls, Queries), records each decision and keeps their ids for the answer's
/// `Firegate-Rules-Decision`. Made by `SecurityRules.documentJudge`, which gives none when
/// nothing is judged (no rules, or the admin).
public final class DocumentRulesJudge: CommitJudge, Sendable {
    let release: SecurityRules.FirestoreRelease
    let database: DatabaseID
    let caller: RulesCaller
    let auth: RulesValue
    let log: RulesDecisionLog
    let clock: ServerClock
    private let ids = Mutex<[String]>([])
    /// Commit judgements made under the database's lock, recorded once it is released.
    private let unsettled = Mutex<[Judged]>([])

    init(release: SecurityRules.FirestoreRelease, database: DatabaseID, caller: RulesCaller, log: RulesDecisionLog, clock: ServerClock) {
        self.release = release
        self.database = database
        self.caller = caller
        self.auth = caller.auth
        self.log = log
        self.clock = clock
    }

    /// The ids of the decisions made so far, for `Firegate-Rules-Decision`.
    public var decisionIDs: [String] { ids.withLock { $0 } }

    /// A `get` of each document (a batch get judges all of them as one decision).
    public func get(_ documents: [(ResourcePath, Document?)], in store: DocumentDatabase) throws(FiregateError) {
        let reader = DatabaseRulesReader(database: store)
        let time = now
        var judged = Judged()
        for (path, document) in documents {
            let resource = document.map { RulesValue.resource($0, database: database) } ?? .null
            let request = FirestoreRulesRequest(method: .get, path: RulesValue.documentPath(path, database: database), auth: auth, time: time,
                                                resource: resource)
            judged.add("get", path, release.ruleset.decide(request, reader: reader, recordsVisits: true), input(request), release.coverage)
        }
        try finish(judged)
    }

    /// A `get` of the current version of one document (the hot read: its resource is cached).
    public func getLatest(_ path: ResourcePath, in store: DocumentDatabase) throws(FiregateError) {
        let resource = store.rulesResource(path) ?? .null
        let request = FirestoreRulesRequest(method: .get, path: RulesValue.documentPath(path, database: database), auth: auth, time: now,
                                            resource: resource)
        var judged = Judged()
        judged.add("get", path, release.ruleset.decide(request, reader: DatabaseRulesReader(database: store), recordsVisits: true),
                   input(request), release.coverage)
        try finish(judged)
    }

    /// A `list`: a query, an aggregation, a collection listing or a query listen.
    public func list(_ query: Query, in store: DocumentDatabase) throws(FiregateError) {
        let rulesQuery: FirestoreRulesQuery
        do {
            rulesQuery = try FirestoreRulesQuery(query)
        } catch {
            throw FiregateError.invalidArgument(error.message)
        }
        var path = RulesValue.documentPath(query.parent, database: database)
        if query.allDescendants { path.append(FirestoreRulesQuery.anyPath) }
        path += [query.collectionID, FirestoreRulesQuery.anyDocument]
        let request = FirestoreRulesRequest(method: .list, path: path, auth: auth, time: now, query: rulesQuery.value)
        let decision = release.ruleset.decideList(request, query: rulesQuery, reader: DatabaseRulesReader(database: store), recordsVisits: true)
        let shown = query.parent.appending(query.collectionID)
        var judged = Judged()
        judged.add("list", shown, decision, input(request, query: rulesQuery), release.coverage, group: query.allDescendants)
        try finish(judged)
    }

    /// A commit, judged as one while the database holds its lock: each write by its own method
    /// against the stored document, `request.resource` as the document will be after the
    /// commit, `getAfter` seeing the whole commit (A12). Any denial fails the commit.
    /// Recorded by `settle()`, once the database's lock is released.
    public func judge(_ writes: [Write], stored: (ResourcePath) -> RulesValue?, after: (ResourcePath) -> RulesValue?,
                      commitTime: Timestamp) throws(FiregateError) {
        let judged = withoutActuallyEscaping(stored) { stored in
            withoutActuallyEscaping(after) { after in
                evaluate(writes, reader: CommitRulesReader(database: database, stored: stored, after: after), commitTime: commitTime)
            }
        }
        guard !judged.evaluations.isEmpty else { return }
        unsettled.withLock { $0.append(judged) }
        if let denial = judged.denial { throw FiregateError(.permissionDenied, denial) }
    }

    /// Records the commit judgements made under the database's lock (called once it is released,
    /// so coverage and the decisions log never hold it up).
    public func settle() {
        for judged in unsettled.withLock({ pending in defer { pending.removeAll() }; return pending }) { record(judged) }
    }

    private func evaluate(_ writes: [Write], reader: CommitRulesReader, commitTime: Timestamp) -> Judged {
        let database = database
        let time = RulesValue.timestamp(seconds: commitTime.seconds, nanos: commitTime.nanos)
        var limits = RulesLimits()
        limits.accessCalls = writes.count > 1 ? 20 : 10
        var judged = Judged()
        for write in writes {
            let before = reader.stored(write.path)
            let method: RulesMethod
            switch write.operation {
            // A transaction's check of a document it read: judged as the read it stands for.
            case .verify: method = .get
            case .delete: method = .delete
            default: method = before == nil ? .create : .update
            }
            let resource = before ?? .null
            let result: RulesValue? = switch method {
            case .get: nil
            case .delete: RulesValue.null
            default: reader.after(write.path) ?? .null
            }
            let request = FirestoreRulesRequest(method: method, path: RulesValue.documentPath(write.path, database: database), auth: auth,
                                                time: time, resource: resource, requestResource: result)
            judged.add(method.rawValue, write.path, release.ruleset.decide(request, reader: reader, limits: limits, recordsVisits: true),
                       input(request, limits: limits), release.coverage)
        }
        return judged
    }

    /// The evaluations of one request as they are made, what their subexpressions gave (for
    /// coverage; a trace evaluates them again) and the first denial's message.
    private struct Judged {
        var evaluations: [RulesDecisionRecord.Evaluation] = []
        var visits: [[RulesVisit]] = []
        var denial: String?

        mutating func add(_ method: String, _ path: ResourcePath, _ decision: FirestoreRulesDecision, _ input: FirestoreEvaluationInput,
                          _ coverage: RulesCoverage, group: Bool = false) {
            visits.append(decision.visits)
            let shown = "/" + (group ? ["**", path.lastSegment] : path.segments).joined(separator: "/")
            evaluations.append(RulesDecisionRecord.Evaluation(method: method, path: shown, decision, input))
            if !decision.allowed, denial == nil { denial = decision.message }
        }
    }

    private func input(_ request: FirestoreRulesRequest, query: FirestoreRulesQuery? = nil, limits: RulesLimits = RulesLimits()) -> FirestoreEvaluationInput {
        FirestoreEvaluationInput(ruleset: release.ruleset, request: request, query: query, limits: limits)
    }

    private var now: RulesValue {
        let time = clock.now()
        return .timestamp(seconds: time.seconds, nanos: time.nanos)
    }

    private func finish(_ judged: Judged) throws(FiregateError) {
        record(judged)
        if let denial = judged.denial { throw FiregateError(.permissionDenied, denial) }
    }

    private func record(_ judged: Judged) {
        for visits in judged.visits { release.coverage.record(visits) }
        let record = log.record(service: .firestore, scope: database.project, caller: caller, message: judged.denial ?? "",
                                evaluations: judged.evaluations, source: release.ruleset.source)
        ids.withLock { $0.append(record.id) }
    }
}

/// The judge's view of a commit in progress, called under the database's lock.
public protocol CommitJudge: Sendable {
    /// Throws (PERMISSION_DENIED) to refuse the commit; nothing is then written.
    /// `stored` and `after` give documents as rules resources (nil: none).
    func judge(_ writes: [Write], stored: (ResourcePath) -> RulesValue?, after: (ResourcePath) -> RulesValue?,
               commitTime: Timestamp) throws(FiregateError)
    /// Called once the lock is released: records what `judge` decided.
    func settle()
}

/// `get()` and `exists()` from a request's rules: the database's current documents.
struct DatabaseRulesReader: RulesDocumentReader {
    let database: DocumentDatabase

    func resource(at path: [String], after: Bool) -> RulesValue? {
        guard let documentPath = DatabaseRulesReader.documentPath(path, in: database.id) else { return nil }
        return database.rulesResource(documentPath)
    }

    /// `databases/d/documents/a/b` → `a/b` when `d` is this database.
    static func documentPath(_ path: [String], in database: DatabaseID) -> ResourcePath? {
        guard path.count >= 5, path[0] == "databases", path[1] == database.database, path[2] == "documents" else { return nil }
        return ResourcePath(Array(path.dropFirst(3)))
    }
}

/// `get()` sees the stored documents, `getAfter()` the documents as the commit leaves them.
struct CommitRulesReader: RulesDocumentReader {
    let database: DatabaseID
    let stored: (ResourcePath) -> RulesValue?
    let after: (ResourcePath) -> RulesValue?

    func resource(at path: [String], after isAfter: Bool) -> RulesValue? {
        guard let documentPath = DatabaseRulesReader.documentPath(path, in: database) else { return nil }
        return isAfter ? after(documentPath) : stored(documentPath)
    }
}

extension SecurityRules {
    /// The judge of `caller`'s requests to `database`, or nil when they are not judged.
    public func documentJudge(_ database: DatabaseID, caller: RulesCaller) -> DocumentRulesJudge? {
        guard isActive, let release = firestore(project: database.project) else { return nil }
        return documentJudge(database, caller: caller, release: release)
    }

    /// The judge under `release` (the project's rules, looked up already).
    public func documentJudge(_ database: DatabaseID, caller: RulesCaller, release: FirestoreRelease) -> DocumentRulesJudge? {
        guard caller.identity != .admin else { return nil }
        return DocumentRulesJudge(release: release, database: database, caller: caller, log: decisions, clock: clock)
    }
}
