import FiregateModel
import FiregateRules

/// A commit worked out against the database's state before anything changes: each write's
/// result, the documents that change (before and after, in the order first written) and the
/// new versions as the rules saw them. `DatabaseState.stage` makes it without touching the
/// state or storage; `DocumentDatabase.persist` puts it in memory and queues it to the store.
struct StagedCommit {
    let commitTime: Timestamp
    let results: [WriteResult]
    /// Only documents whose new version differs from the stored one.
    let changes: [DocumentChange]
    /// The rules' resources of the new versions the judge read, kept as their cached resources.
    let judgedAfter: [ResourcePath: RulesValue]
}

extension DatabaseState {
    /// Applies `writes` to copies of the stored documents (a later write to the same document
    /// sees the earlier one's result), gives each its result, and lets `judge` refuse the whole
    /// commit against the stored and the resulting documents. Changes nothing.
    func stage(_ writes: [Write], commitTime: Timestamp, database: DatabaseID, judge: (any CommitJudge)?) throws(FiregateError) -> StagedCommit {
        var working: [ResourcePath: Document?] = [:]
        var order: [ResourcePath] = []
        var results: [WriteResult] = []
        results.reserveCapacity(writes.count)
        for write in writes {
            let existing: Document? = if let pending = working[write.path] { pending } else { documents[write.path]?.document }
            let outcome = try write.apply(to: existing, commitTime: commitTime, database: database) { _ in .timestamp(commitTime) }
            if outcome.changed {
                if working[write.path] == nil { order.append(write.path) }
                working[write.path] = .some(outcome.document)
            }
            var updateTime: Timestamp?
            switch write.operation {
            case .delete: updateTime = nil
            // The document's own (unchanged) update time; a missing one's check, the commit's.
            case .verify: updateTime = existing?.updateTime ?? commitTime
            default: updateTime = outcome.document?.updateTime
            }
            results.append(WriteResult(updateTime: updateTime, transformResults: write.transforms.isEmpty ? nil : outcome.transformResults))
        }
        var judgedAfter: [ResourcePath: RulesValue] = [:]
        if let judge {
            // Stored documents as rules read them come from the per-version cache when a read made it.
            try judge.judge(writes, stored: { path in
                documents[path].map { $0.rulesResource ?? RulesValue.resource($0.document, database: database) }
            }, after: { path in
                if let pending = working[path] {
                    guard let pending else { return nil }
                    if let made = judgedAfter[path] { return made }
                    let made = RulesValue.resource(pending, database: database)
                    judgedAfter[path] = made
                    return made
                }
                return documents[path].map { $0.rulesResource ?? RulesValue.resource($0.document, database: database) }
            }, commitTime: commitTime)
        }
        var changes: [DocumentChange] = []
        for path in order {
            let before = documents[path]?.document
            let after = working[path]!
            if before != after { changes.append(DocumentChange(path: path, before: before, after: after)) }
        }
        return StagedCommit(commitTime: commitTime, results: results, changes: changes, judgedAfter: judgedAfter)
    }
}
