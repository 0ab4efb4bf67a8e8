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

    /// Runs a run of edge units in one transaction, in order; all succeed or all fail, except
    /// those of a client this replica no longer runs (the fence, `fencedClients`), which write
    /// nothing and fail UNAVAILABLE.
    func applyEdgeChanges(_ units: [PostgresCommitQueue.Unit]) {
        var fenced: [String: FiregateError] = [:]
        let result = Result { () throws(FiregateError) in
            let work = units.contains { if case .edge(let changes, _, _) = $0 { !changes.isEmpty } else { false } }
            guard work else { return }
            try writer.transaction { () throws(FiregateError) -> Void in
                fenced = try fencedClients(units)
                for case .edge(let changes, let client, _) in units where fenced[client] == nil {
                    for change in changes { try apply(change, client: client) }
                }
            }
        }
        if case .failure(let error) = result { logger.warning("An edge client's cache write failed: \(error)") }
        for case .edge(_, let client, let completion) in units {
            if case .success = result, let refusal = fenced[client] {
                completion?(.failure(refusal))
            } else {
                completion?(result.mapError { $0 })
            }
        }
    }

    /// The fence on edge caches: of the clients with changes in `units`, those another replica
    /// runs now, or that this replica runs at another epoch than it claimed (it lost the client
    /// and took it back since). Their owner rows stay locked (FOR SHARE) until the transaction
    /// ends, so a takeover waits for the writes allowed here and restores them.
    /// A client that was never claimed (no row) is written as on a store of one process.
    private func fencedClients(_ units: [PostgresCommitQueue.Unit]) throws(FiregateError) -> [String: FiregateError] {
        var clients: Set<String> = []
        for case .edge(let changes, let client, _) in units where !changes.isEmpty && !client.isEmpty { clients.insert(client) }
        guard !clients.isEmpty else { return [:] }
        let owned = ownedClients.withLock { $0 }
        var fenced: [String: FiregateError] = [:]
        let rows = try writer.query("""
            SELECT client_id, replica, epoch FROM fg_client_owner WHERE client_id = ANY(\(clients.map(PostgresText.stored))) FOR SHARE
            """).rows
        for row in rows {
            let (stored, replica, epoch) = try decode(row, (String, String, Int64).self)
            let client = PostgresText.loaded(stored)
            guard replica != replicaID || owned[client] != epoch else { continue }
            fenced[client] = FiregateError(.unavailable, "Edge client \(client) is run by replica \(replica) now; this replica writes nothing of it.")
        }
        return fenced
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
