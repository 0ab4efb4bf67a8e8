import FiregateModel
import FiregateStore
import Foundation

/// Export and import of a whole database (`/emulator/v1/export`, `/import`).
extension DocumentDatabase {
    /// Every document, in path order.
    public func allDocuments() -> [Document] {
        state.withLock { state in state.documents.values.map(\.document) }
            .sorted { ResourcePath.compare($0.path, $1.path) < 0 }
    }

    /// Makes the database hold exactly `documents`, with their own create and update times,
    /// durably. Open listeners see the difference as one change; reads at earlier times and
    /// resume tokens from before are refused afterwards, as after a restart.
    public func replaceAll(with documents: [Document]) async throws {
        let cleared = DurabilitySignal(), stored = DurabilitySignal()
        try state.withLock { state throws(FiregateError) in
            if state.recovering { throw .unavailable("The database is recovering from a storage failure; retry the import.") }
            var fresh = DatabaseState()
            for document in documents { fresh.put(document) }
            var changes: [DocumentChange] = []
            for (path, entry) in state.documents where fresh.documents[path] == nil {
                changes.append(DocumentChange(path: path, before: entry.document, after: nil))
            }
            for (path, entry) in fresh.documents where state.documents[path]?.document != entry.document {
                changes.append(DocumentChange(path: path, before: state.documents[path]?.document, after: entry.document))
            }
            let commitTime = Timestamp(microseconds: clock.nextCommitMicros())
            // Counted as the store's log counts them: the clear, then the documents if any.
            fresh.sequence = state.sequence + (documents.isEmpty ? 1 : 2)
            fresh.prunedThrough = commitTime
            let record = CommitRecord(sequence: fresh.sequence, commitTime: commitTime, changes: changes)
            state = fresh
            storage.enqueueClear(id) { [self] outcome in
                if case .success = outcome { adoptLogGeneration() }
                cleared.complete(outcome)
            }
            let feed = self.feed
            storage.enqueue(DocumentPersistBatch(database: id, upserts: documents, deletes: [])) { [self] outcome in
                if case .success = outcome, !record.changes.isEmpty { feed.publish(record) }
                if case .failure = outcome { DispatchQueue.global().async { self.recoverFromStorage() } }
                stored.complete(outcome)
            }
        }
        try await cleared.wait()
        try await stored.wait()
    }
}

extension DocumentBackend {
    /// Every database that holds documents, with its documents in path order.
    public func exportAll() -> [(DatabaseID, [Document])] {
        allDatabases.map { ($0.id, $0.allDocuments()) }.filter { !$0.1.isEmpty }
            .sorted { ($0.0.project, $0.0.database) < ($1.0.project, $1.0.database) }
    }

    /// Makes every database hold exactly what `databases` gives (the others become empty).
    public func replaceAll(_ databases: [(DatabaseID, [Document])]) async throws {
        let given = Dictionary(databases, uniquingKeysWith: { $0 + $1 })
        for existing in allDatabases where given[existing.id] == nil {
            try await existing.replaceAll(with: [])
        }
        for (id, documents) in databases {
            try await database(id).replaceAll(with: documents)
        }
    }
}
