import FiregateBackend
import FiregateModel

/// A listen's standing with the rules: who listens, and the rules generation it was last
/// judged under. When the rules change (the feed wakes every listen with a heartbeat) the
/// listen is judged again; one that lost access ends with the denial.
struct ListenAccess: Sendable {
    let rules: SecurityRules
    let caller: RulesCaller
    private var generation: UInt64

    init(rules: SecurityRules, caller: RulesCaller) {
        self.rules = rules
        self.caller = caller
        generation = rules.generation
    }

    /// The judge of a request made now, or nil when the rules do not judge it.
    func judge(_ database: DocumentDatabase) -> DocumentRulesJudge? {
        rules.documentJudge(database.id, caller: caller)
    }

    /// The judge to judge the listen again with, when the rules changed since it was last
    /// judged (nil: nothing changed, or nothing is judged now).
    mutating func rejudge(_ database: DocumentDatabase) -> DocumentRulesJudge? {
        let current = rules.generation
        guard current != generation else { return nil }
        generation = current
        return judge(database)
    }

    /// After a rules change: the denial when `check` no longer passes, nil otherwise (and
    /// nil when nothing changed since the last time).
    mutating func revocation(_ database: DocumentDatabase, _ check: (DocumentRulesJudge) throws(FiregateError) -> Void) -> FiregateError? {
        guard let judge = rejudge(database) else { return nil }
        do {
            try check(judge)
            return nil
        } catch {
            return error
        }
    }
}
