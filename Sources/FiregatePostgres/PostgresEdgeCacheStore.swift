import FiregateModel
import FiregateStore
import Foundation
import PostgresNIO

/// Persistent edge clients' caches in PostgreSQL (`fg_edge_*`), written through the replica's
/// commit queue in order with its document and tree commits, so a batch saved to a client's
/// queue is durable before the commit that removes it.
extension PostgresStore: EdgeCacheStore {
    public func enqueue(_ changes: [EdgeCacheChange], client: String, onDurable: (@Sendable (Result<Void, any Error>) -> Void)?) {
        queue.enqueue(.edge(changes, client: client, onDurable))
    }

    public func flush() async throws {
        try await commit([], client: "")
    }

    private func commit(_ changes: [EdgeCacheChange], client: String) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enqueue(changes, client: client) { continuation.resume(with: $0) }
        }
    }

    public func mutationRemoval(client: String, batchID: Int64) -> any CommitCompanion {
        PostgresEdgeCompanion(store: self, client: client, change: .deleteMutation(batchID: batchID))
    }

    public func replace(client: String, edge snapshot: EdgeCacheStorage.Snapshot) async throws {
        var changes: [EdgeCacheChange] = [.clear(includingSettings: true), .settings(json: JSONWriter.bytes(snapshot.settings))]
        for document in snapshot.documents {
            changes.append(.document(path: document.path.canonical, found: document.found, committed: document.committed,
                                     fields: document.found ? JSONWriter.bytes(Value.fieldsJSON(document.fields)) : nil,
                                     createUs: document.found ? document.createTime.microseconds : 0, updateUs: document.updateTime.microseconds,
                                     sequence: document.sequenceNumber))
        }
        for (batchID, time, writes) in snapshot.mutations {
            changes.append(.mutation(batchID: batchID, localWriteUs: time.microseconds, writes: JSONWriter.bytes(writes), uid: snapshot.mutationUsers[batchID] ?? ""))
        }
        if let indexes = snapshot.indexes { changes.append(.indexes(json: JSONWriter.bytes(indexes))) }
        if let bundles = snapshot.bundles { changes.append(.bundles(json: JSONWriter.bytes(bundles))) }
        changes += snapshot.targets.map { .target($0) }
        try await commit(changes, client: client)
    }

    public func replace(client: String, tree snapshot: TreeCacheStorage.Snapshot) async throws {
        var changes: [EdgeCacheChange] = [.clearTree(includingAuth: true), .treeCache(snapshot.rows.map { .putRow($0) })]
        changes += snapshot.queries.map { .treeQuery($0) }
        for body in snapshot.writes {
            if let id = body["id"]?.integerLike { changes.append(.treeWrite(id: id, body: JSONWriter.bytes(body))) }
        }
        if let auth = snapshot.auth { changes.append(.auth(json: JSONWriter.bytes(auth))) }
        try await commit(changes, client: client)
    }

    /// Runs a run of edge units in one transaction, in order; all succeed or all fail.
    func applyEdgeChanges(_ units: [PostgresCommitQueue.Unit]) {
        let result = Result { () throws(FiregateError) in
            let work = units.contains { if case .edge(let changes, _, _) = $0 { !changes.isEmpty } else { false } }
            guard work else { return }
            try writer.transaction { () throws(FiregateError) -> Void in
                for case .edge(let changes, let client, _) in units {
                    for change in changes { try apply(change, client: client) }
                }
            }
        }
        if case .failure(let error) = result { logger.warning("An edge client's cache write failed: \(error)") }
        for case .edge(_, _, let completion) in units { completion?(result.mapError { $0 }) }
    }

    /// Writes one change on the writer's connection (inside the caller's transaction).
    func apply(_ change: EdgeCacheChange, client rawClient: String) throws(FiregateError) {
        for statement in EdgeCacheStatements.statements(change, client: PostgresText.stored(rawClient)) {
            switch statement {
            case .run(let query):
                try writer.query(query)
            case .targetPosition(let update, let insert, let rest):
                // An update that finds no row means the target was never saved: write it whole.
                let updated = try writer.query(update).metadata.rows ?? 0
                for query in updated == 0 ? insert() : rest { try writer.query(query) }
            }
        }
    }
}

/// A queued batch's removal as data, run in the transaction of the document commit that
/// applies it (see `CommitPlan`).
struct PostgresEdgeCompanion: CommitCompanion {
    let store: PostgresStore
    let client: String
    let change: EdgeCacheChange

    func enqueueAlone() { store.enqueue([change], client: client, onDurable: nil) }
}
