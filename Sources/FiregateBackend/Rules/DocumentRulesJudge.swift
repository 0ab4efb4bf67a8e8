import FiregateModel
import FiregateRules
import Synchronization

/// Judges one caller's requests to one database against its project's rules (reference/
/// security-rules.md A3, A9–A12), records each decision and keeps their ids for the answer's
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

    init(release: SecurityRules.FirestoreRelease, database: DatabaseID, caller: RulesCaller, log: RulesDecisionLog, clock: ServerClock) {
        self.release = release
        self.database = database
        self.caller = caller
        self.auth = RulesValue.auth(claims: caller.claims)
        self.log = log
        self.clock = clock
    }

    /// The ids of the decisions made so far, for `Firegate-Rules-Decision`.
    public var decisionIDs: [String] { ids.withLock { $0 } }

    /// A `get` of each document (a batch get judges all of them as one decision).
    public func get(_ documents: [(ResourcePath, Document?)], in store: DocumentDatabase) throws(FiregateError) {
        let reader = DatabaseRulesReader(database: store)
        let time = now
        var evaluations: [RulesDecisionRecord.Evaluation] = []
        for (path, document) in documents {
            let resource = document.map { RulesValue.resource($0, database: database) } ?? .null
            let request = FirestoreRulesRequest(method: .get, path: RulesValue.documentPath(path, database: database), auth: auth, time: time,
                                                resource: resource)
            let decision = release.ruleset.decide(request, reader: reader, recordsVisits: true)
            evaluations.append(.init(method: "get", path: "/" + path.segments.joined(separator: "/"),
                                     detail: .firestore(decision, request: request.value, resource: resource)))
        }
        try finish(evaluations)
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
        let shown = "/" + (query.parent.segments + (query.allDescendants ? ["**"] : []) + [query.collectionID]).joined(separator: "/")
        try finish([.init(method: "list", path: shown, detail: .firestore(decision, request: request.value, resource: .null))])
    }

    /// A commit, judged as one while the database holds its lock: each write by its own method
    /// against the stored document, `request.resource` as the document will be after the
    /// commit, `getAfter` seeing the whole commit (A12). Any denial fails the commit.
    public func judge(_ writes: [Write], stored: (ResourcePath) -> Document?, after: (ResourcePath) -> Document?,
                      commitTime: Timestamp) throws(FiregateError) {
        let evaluations = withoutActuallyEscaping(stored) { stored in
            withoutActuallyEscaping(after) { after in
                evaluate(writes, reader: CommitRulesReader(database: database, stored: stored, after: after), commitTime: commitTime)
            }
        }
        guard !evaluations.isEmpty else { return }
        try finish(evaluations)
    }

    private func evaluate(_ writes: [Write], reader: CommitRulesReader, commitTime: Timestamp) -> [RulesDecisionRecord.Evaluation] {
        let database = database
        let time = RulesValue.timestamp(seconds: commitTime.seconds, nanos: commitTime.nanos)
        var limits = RulesLimits()
        limits.accessCalls = writes.count > 1 ? 20 : 10
        var evaluations: [RulesDecisionRecord.Evaluation] = []
        for write in writes {
            let before = reader.stored(write.path)
            let method: RulesMethod
            switch write.operation {
            case .verify: continue
            case .delete: method = .delete
            default: method = before == nil ? .create : .update
            }
            let resource = before.map { RulesValue.resource($0, database: database) } ?? .null
            let result = method == .delete ? RulesValue.null : (reader.after(write.path).map { RulesValue.resource($0, database: database) } ?? .null)
            let request = FirestoreRulesRequest(method: method, path: RulesValue.documentPath(write.path, database: database), auth: auth,
                                                time: time, resource: resource, requestResource: result)
            let decision = release.ruleset.decide(request, reader: reader, limits: limits, recordsVisits: true)
            evaluations.append(.init(method: method.rawValue, path: "/" + write.path.segments.joined(separator: "/"),
                                     detail: .firestore(decision, request: request.value, resource: resource)))
        }
        return evaluations
    }

    private var now: RulesValue {
        let time = clock.now()
        return .timestamp(seconds: time.seconds, nanos: time.nanos)
    }

    private func finish(_ evaluations: [RulesDecisionRecord.Evaluation]) throws(FiregateError) {
        let denied = evaluations.first { !$0.allowed }
        var message = ""
        if let denied, case .firestore(let decision, _, _) = denied.detail { message = decision.message }
        for evaluation in evaluations {
            if case .firestore(let decision, _, _) = evaluation.detail { release.coverage.record(decision.visits) }
        }
        let record = log.record(service: .firestore, scope: database.project, caller: caller, message: message,
                                evaluations: evaluations, source: release.ruleset.source)
        ids.withLock { $0.append(record.id) }
        if denied != nil { throw FiregateError(.permissionDenied, message) }
    }
}

/// The judge's view of a commit in progress, called under the database's lock.
public protocol CommitJudge: Sendable {
    /// Throws (PERMISSION_DENIED) to refuse the commit; nothing is then written.
    func judge(_ writes: [Write], stored: (ResourcePath) -> Document?, after: (ResourcePath) -> Document?,
               commitTime: Timestamp) throws(FiregateError)
}

/// `get()` and `exists()` from a request's rules: the database's current documents.
struct DatabaseRulesReader: RulesDocumentReader {
    let database: DocumentDatabase

    func resource(at path: [String], after: Bool) -> RulesValue? {
        guard let documentPath = DatabaseRulesReader.documentPath(path, in: database.id),
              let document = try? database.get(documentPath).value else { return nil }
        return RulesValue.resource(document, database: database.id)
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
    let stored: (ResourcePath) -> Document?
    let after: (ResourcePath) -> Document?

    func resource(at path: [String], after isAfter: Bool) -> RulesValue? {
        guard let documentPath = DatabaseRulesReader.documentPath(path, in: database),
              let document = isAfter ? after(documentPath) : stored(documentPath) else { return nil }
        return RulesValue.resource(document, database: database)
    }
}

extension SecurityRules {
    /// The judge of `caller`'s requests to `database`, or nil when they are not judged.
    public func documentJudge(_ database: DatabaseID, caller: RulesCaller) -> DocumentRulesJudge? {
        guard isActive, caller.identity != .admin, let release = firestore(project: database.project) else { return nil }
        return DocumentRulesJudge(release: release, database: database, caller: caller, log: decisions, clock: clock)
    }
}
