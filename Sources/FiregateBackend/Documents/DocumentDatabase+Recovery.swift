import FiregateModel
import FiregateStore
import Foundation

/// What a database does when its storage fails a batch.
extension DocumentDatabase {
    /// A storage failure as the writer sees it: UNAVAILABLE when the store says so (PostgreSQL
    /// unreachable, or this replica does not own the database now), so clients retry; INTERNAL
    /// otherwise.
    static func notDurable(_ error: any Error, _ what: String) -> FiregateError {
        if let error = error as? FiregateError, error.status == .unavailable {
            return FiregateError(.unavailable, "The \(what) could not be made durable: \(error.message)")
        }
        return .internal("The \(what) could not be made durable: \(error)")
    }

    /// After a batch failed to reach the disk, the memory holds a write that is not durable:
    /// refuse commits from now on, reload the state from storage (after every batch queued so
    /// far), and end the listeners, whose view may have included the lost write. `then` runs
    /// once the memory no longer holds it (or the first reload failed), so a writer told of the
    /// failure never reads its lost write back.
    /// Called off the storage's thread and outside the state's lock (a storage callback may
    /// run under either).
    /// A load that fails (the store unreachable) is tried again every second, the database
    /// refusing commits meanwhile, so it comes back by itself once the store does.
    func recoverFromStorage(then done: @escaping @Sendable () -> Void = {}) {
        let start = state.withLock { current -> Bool in
            current.afterReload.append(done)
            guard !current.recovering else { return false }
            current.recovering = true
            return true
        }
        if start { reloadFromStorage() }
    }

    private func reloadFromStorage() {
        storage.enqueueLoad(id) { [self] result in
            guard case .success(let documents) = result else {
                let waiting = state.withLock { state in
                    defer { state.afterReload = [] }
                    return state.afterReload
                }
                for done in waiting { done() }
                DispatchQueue.global().asyncAfter(deadline: .now() + 1) { self.reloadFromStorage() }
                return
            }
            replaceState(with: documents, ending: FiregateError(.unavailable,
                "A write could not be made durable; the database was reloaded from storage. Listen again."), at: storage.position(id))
        }
    }

    /// Replaces what the database holds with `documents` (a new sequence, no history before it)
    /// and ends its listeners with `reason`: what they were told may be gone. Writers waiting
    /// for a reload are answered then. On a shared store `position` says where in the log the
    /// documents stand.
    func replaceState(with documents: [Document], ending reason: FiregateError, at position: LogPosition? = nil) {
        if let position { epoch.withLock { $0 = position.generation } }
        // Read before the lock: readers of the database do not wait for the store.
        var loaded: [ResourcePath: Document] = [:]
        for document in documents { loaded[document.path] = document }
        let logged = position.map { storage.loggedCommits(id, through: $0.seq) { loaded[$0] } } ?? []
        let waiting = state.withLock { state in
            let waiting = state.afterReload
            var fresh = DatabaseState()
            fresh.sequence = position?.seq ?? state.sequence + 1
            fresh.prunedThrough = clock.now()
            for document in documents { fresh.put(document) }
            if let position { DocumentDatabase.installLoggedHistory(&fresh, logged, through: position.seq) }
            state = fresh
            return waiting
        }
        feed.closeAll(reason)
        for done in waiting { done() }
    }

    /// Applies a commit another replica made (read from the shared store's log): installs its
    /// documents, records it and publishes it to listeners, as a local commit once durable.
    /// A cleared database ends its listeners, as `reset()` does.
    public func applyReplicated(_ change: ReplicatedDocumentChange) {
        switch change {
        case .clear(let position):
            replaceState(with: [], ending: .init(.aborted, "The database was reset."), at: position)
        case .reload(let documents, let position):
            replaceState(with: documents, ending: FiregateError(.unavailable,
                "This replica fell behind the commit log and reloaded the database. Listen again."), at: position)
        case .commit(let upserts, let deletes, let commitTime, let seq):
            let record = state.withLock { state -> CommitRecord? in
                var changes: [DocumentChange] = []
                for document in upserts {
                    let before = state.documents[document.path]?.document
                    guard before != document else { continue }
                    changes.append(DocumentChange(path: document.path, before: before, after: document))
                    state.put(document)
                }
                for path in deletes {
                    guard let before = state.documents[path]?.document else { continue }
                    changes.append(DocumentChange(path: path, before: before, after: nil))
                    state.remove(path)
                }
                // Counted as the log counts: the owner's `seq` (a commit with nothing new here
                // still moves the count).
                guard !changes.isEmpty else {
                    state.sequence = max(state.sequence, seq)
                    return nil
                }
                state.sequence = max(state.sequence + 1, seq)
                let record = CommitRecord(sequence: state.sequence, commitTime: commitTime, changes: changes)
                state.record(record)
                return record
            }
            guard let record else { return }
            feed.publish(record)
            operations?.record(.commit(database: id, commitTime: commitTime, documents: record.changes.map(\.path)))
        }
    }

    /// On a shared store: the log's commits up to the loaded position become the history, so
    /// read times and resume tokens from before this replica loaded the database (or before it
    /// restarted) work here as on the replica that made them. The history must end exactly at
    /// the loaded state; a log that does not reach it leaves none.
    static func installLoggedHistory(_ state: inout DatabaseState, _ commits: [LoggedDocumentCommit], through seq: Int64) {
        guard let last = commits.last, last.seq == seq else { return }
        let pruned = state.prunedThrough
        state.prunedThrough = nil
        for commit in commits {
            var befores: [ResourcePath: Document] = [:]
            for document in commit.befores { befores[document.path] = document }
            let changes = commit.upserts.map { DocumentChange(path: $0.path, before: befores[$0.path], after: $0) }
                + commit.deletes.map { DocumentChange(path: $0, before: befores[$0], after: nil) }
            state.record(CommitRecord(sequence: commit.seq, commitTime: commit.commitTime, changes: changes))
        }
        // Reads before the first commit kept are refused, as after a prune.
        if state.prunedThrough == nil, let first = state.history.first {
            state.prunedThrough = Timestamp(microseconds: first.commitTime.microseconds - 1)
        }
        if state.history.isEmpty { state.prunedThrough = pruned }
    }
}
