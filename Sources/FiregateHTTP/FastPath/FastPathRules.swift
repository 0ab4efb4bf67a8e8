import FiregateBackend
import FiregateModel

/// The rules' part of the fast path: a simple document GET or commit is judged on the event
/// loop (the judge reads under the database's lock and never waits), so loaded rules do not
/// send every request the long way. Answers are the full path's, byte for byte, with the
/// decision's header.
struct FastPathRules: Sendable {
    let rules: SecurityRules

    /// How a request to `database` is judged: nil when it is not (no rules for its project, or
    /// the admin), else the judge, or the 401 for a token that names no one.
    func judge(_ database: DatabaseID, authorization: String?) -> Result<DocumentRulesJudge, FiregateError>? {
        guard rules.isActive, let release = rules.firestore(project: database.project) else { return nil }
        do {
            let caller = try rules.caller(token: CallIdentity.bearerToken(authorization), judged: true, surface: "rest")
            return rules.documentJudge(database, caller: caller, release: release).map { .success($0) }
        } catch {
            return .failure(error)
        }
    }

    /// Who an `Authorization` header names (the admin token too), for judging a stream later.
    func identity(_ authorization: String?) -> CallIdentity {
        (try? rules.caller(token: CallIdentity.bearerToken(authorization), judged: false, surface: "sse").identity) ?? .unauthenticated
    }

    /// A judged GET: the denial, the 404, or the document's cached encoding.
    func get(_ database: DocumentDatabase, _ path: ResourcePath, _ verdict: Result<DocumentRulesJudge, FiregateError>) -> ConnectionFastPath.Answer {
        let judge: DocumentRulesJudge
        switch verdict {
        case .failure(let error): return FastPathRules.answer(error, decision: nil)
        case .success(let found): judge = found
        }
        do throws(FiregateError) {
            try judge.getLatest(path, in: database)
            guard let bytes = database.encodedDocument(path) else { throw DocumentRoutes.notFound(database.id, path) }
            return ConnectionFastPath.Answer(status: .ok, body: bytes, surface: .documents, decision: FastPathRules.header(judge))
        } catch {
            return FastPathRules.answer(error, decision: FastPathRules.header(judge))
        }
    }

    /// A commit begun, or answered at once (refused).
    enum CommitStart {
        case pending(DocumentDatabase.PendingCommit, decision: String?)
        case answered(ConnectionFastPath.Answer)
    }

    /// A judged commit: begun (judged under the lock as one), or its refusal.
    func commit(_ writes: [Write], _ database: DocumentDatabase, _ verdict: Result<DocumentRulesJudge, FiregateError>) -> CommitStart? {
        switch verdict {
        case .failure(let error):
            return .answered(FastPathRules.answer(error, decision: nil, method: "POST"))
        case .success(let judge):
            do throws(FiregateError) {
                return .pending(try database.beginCommit(writes, judge: judge), decision: FastPathRules.header(judge))
            } catch where error.status == .permissionDenied {
                return .answered(FastPathRules.answer(error, decision: FastPathRules.header(judge), method: "POST"))
            } catch {
                // The full path answers the other refusals (and judges again).
                return nil
            }
        }
    }

    static func header(_ judge: DocumentRulesJudge) -> String? {
        let ids = judge.decisionIDs
        return ids.isEmpty ? nil : ids.joined(separator: ", ")
    }

    static func answer(_ error: FiregateError, decision: String?, method: String = "GET") -> ConnectionFastPath.Answer {
        ConnectionFastPath.Answer(status: .init(code: error.httpStatus), body: JSONWriter.bytes(JSON.errorBody(error)), surface: .documents,
                                  method: method, decision: decision)
    }
}
