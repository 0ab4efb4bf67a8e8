import FiregateModel
import FiregateStore
import PostgresNIO

/// Each `EdgeCacheChange` as statements on the `fg_edge_*` tables (the SQLite store's
/// edge_* tables, one for one). `client` is already in stored form (`PostgresText`).
enum EdgeCacheStatements {
    enum Statement {
        case run(PostgresQuery)
        /// Update the target's position; if no row was there, run `insert()`, else `rest`.
        case targetPosition(update: PostgresQuery, insert: () -> [PostgresQuery], rest: [PostgresQuery])
    }

    static func statements(_ change: EdgeCacheChange, client id: String) -> [Statement] {
        switch change {
        case .settings(let json):
            return [.run("""
                INSERT INTO fg_edge_clients (client_id, settings) VALUES (\(id), \(ByteBuffer(bytes: json)))
                ON CONFLICT (client_id) DO UPDATE SET settings = excluded.settings
                """)]
        case .document(let path, let found, let committed, let fields, let created, let updated, let sequence):
            return [.run("""
                INSERT INTO fg_edge_documents (client_id, path, found, committed, fields, create_us, update_us, sequence)
                VALUES (\(id), \(PostgresText.stored(path)), \(found), \(committed), \(fields.map { ByteBuffer(bytes: $0) }), \(created), \(updated), \(sequence))
                ON CONFLICT (client_id, path) DO UPDATE SET found = excluded.found, committed = excluded.committed, fields = excluded.fields,
                    create_us = excluded.create_us, update_us = excluded.update_us, sequence = excluded.sequence
                """)]
        case .documentSequence(let path, let sequence):
            return [.run("UPDATE fg_edge_documents SET sequence = \(sequence) WHERE client_id = \(id) AND path = \(PostgresText.stored(path))")]
        case .deleteDocuments(let paths):
            return [.run("DELETE FROM fg_edge_documents WHERE client_id = \(id) AND path = ANY(\(paths.map(PostgresText.stored)))")]
        case .mutation(let batchID, let localWriteUs, let writes, let uid):
            return [.run("""
                INSERT INTO fg_edge_mutations (client_id, batch_id, local_write_us, writes, uid)
                VALUES (\(id), \(batchID), \(localWriteUs), \(ByteBuffer(bytes: writes)), \(PostgresText.stored(uid)))
                ON CONFLICT (client_id, batch_id) DO UPDATE SET local_write_us = excluded.local_write_us, writes = excluded.writes, uid = excluded.uid
                """)]
        case .deleteMutation(let batchID):
            return [.run("DELETE FROM fg_edge_mutations WHERE client_id = \(id) AND batch_id = \(batchID)")]
        case .target(let target):
            return insertTarget(target, client: id).map(Statement.run)
        case .targetPosition(let target, let joined, let left, let documents):
            let query = PostgresText.stored(target.query)
            let update: PostgresQuery = """
                UPDATE fg_edge_targets SET sequence = \(target.sequenceNumber), synced = \(target.synced), target_id = \(Int64(target.targetID)),
                    resume_token = \(target.resumeToken), snapshot_us = \(target.snapshotVersion.microseconds)
                WHERE client_id = \(id) AND query = \(query)
                """
            var rest: [PostgresQuery] = []
            if !left.isEmpty {
                rest.append("DELETE FROM fg_edge_target_documents WHERE client_id = \(id) AND query = \(query) AND path = ANY(\(left.map(PostgresText.stored)))")
            }
            if !joined.isEmpty {
                rest.append("""
                    INSERT INTO fg_edge_target_documents (client_id, query, path) SELECT \(id), \(query), unnest(\(joined.map(PostgresText.stored))::text[])
                    ON CONFLICT DO NOTHING
                    """)
            }
            return [.targetPosition(update: update, insert: {
                insertTarget(EdgeCacheStorage.StoredTarget(query: target.query, sequenceNumber: target.sequenceNumber, synced: target.synced,
                                                           documents: documents(), targetID: target.targetID, resumeToken: target.resumeToken,
                                                           snapshotVersion: target.snapshotVersion), client: id)
            }, rest: rest)]
        case .indexes(let json):
            return [.run("""
                INSERT INTO fg_edge_indexes (client_id, definitions) VALUES (\(id), \(ByteBuffer(bytes: json)))
                ON CONFLICT (client_id) DO UPDATE SET definitions = excluded.definitions
                """)]
        case .bundles(let json):
            return [.run("""
                INSERT INTO fg_edge_bundles (client_id, state) VALUES (\(id), \(ByteBuffer(bytes: json)))
                ON CONFLICT (client_id) DO UPDATE SET state = excluded.state
                """)]
        case .deleteTargets(let queries):
            let stored = queries.map(PostgresText.stored)
            return [.run("DELETE FROM fg_edge_targets WHERE client_id = \(id) AND query = ANY(\(stored))"),
                    .run("DELETE FROM fg_edge_target_documents WHERE client_id = \(id) AND query = ANY(\(stored))")]
        case .clear(let includingSettings):
            var tables = ["fg_edge_documents", "fg_edge_mutations", "fg_edge_targets", "fg_edge_target_documents", "fg_edge_indexes", "fg_edge_bundles"]
            if includingSettings { tables.append("fg_edge_clients") }
            // Batch ids start again in a cleared queue: receipts of the old ones must not answer them.
            return tables.map { .run("DELETE FROM \(unescaped: $0) WHERE client_id = \(id)") }
                + [.run("DELETE FROM fg_edge_receipts WHERE client_id = \(id) AND kind = 'batch'")]
        case .treeCache(let operations):
            return TreeRowStatements.statements(for: operations, scope: id, table: "fg_edge_tree_cache", ownerColumn: "client_id").map(Statement.run)
        case .treeQuery(let query):
            return [.run("""
                INSERT INTO fg_edge_tree_queries (client_id, id, path, parameters, last_use, complete, active, keys)
                VALUES (\(id), \(query.id), \(PostgresText.stored(query.path)), \(PostgresText.stored(query.parameters)), \(query.lastUse),
                        \(query.complete), \(query.active), \(ByteBuffer(bytes: TreeCacheStorage.keysJSON(query.keys))))
                ON CONFLICT (client_id, id) DO UPDATE SET path = excluded.path, parameters = excluded.parameters, last_use = excluded.last_use,
                    complete = excluded.complete, active = excluded.active, keys = excluded.keys
                """)]
        case .deleteTreeQueries(let ids):
            return [.run("DELETE FROM fg_edge_tree_queries WHERE client_id = \(id) AND id = ANY(\(ids))")]
        case .treeWrite(let writeID, let body):
            return [.run("""
                INSERT INTO fg_edge_tree_writes (client_id, write_id, body) VALUES (\(id), \(writeID), \(ByteBuffer(bytes: body)))
                ON CONFLICT (client_id, write_id) DO UPDATE SET body = excluded.body
                """)]
        case .deleteTreeWrite(let writeID):
            return [.run("DELETE FROM fg_edge_tree_writes WHERE client_id = \(id) AND write_id = \(writeID)")]
        case .auth(let body):
            guard let body else { return [.run("DELETE FROM fg_edge_auth WHERE client_id = \(id)")] }
            return [.run("""
                INSERT INTO fg_edge_auth (client_id, body) VALUES (\(id), \(ByteBuffer(bytes: body)))
                ON CONFLICT (client_id) DO UPDATE SET body = excluded.body
                """)]
        case .clearTree(let includingAuth):
            var tables = ["fg_edge_tree_cache", "fg_edge_tree_queries", "fg_edge_tree_writes"]
            if includingAuth { tables.append("fg_edge_auth") }
            return tables.map { .run("DELETE FROM \(unescaped: $0) WHERE client_id = \(id)") }
                + [.run("DELETE FROM fg_edge_receipts WHERE client_id = \(id) AND kind = 'tree'")]
        }
    }

    /// A target and exactly its keys, replacing what was stored for its query.
    static func insertTarget(_ target: EdgeCacheStorage.StoredTarget, client id: String) -> [PostgresQuery] {
        let query = PostgresText.stored(target.query)
        return [
            """
            INSERT INTO fg_edge_targets (client_id, query, sequence, synced, target_id, resume_token, snapshot_us)
            VALUES (\(id), \(query), \(target.sequenceNumber), \(target.synced), \(Int64(target.targetID)), \(target.resumeToken), \(target.snapshotVersion.microseconds))
            ON CONFLICT (client_id, query) DO UPDATE SET sequence = excluded.sequence, synced = excluded.synced, target_id = excluded.target_id,
                resume_token = excluded.resume_token, snapshot_us = excluded.snapshot_us
            """,
            "DELETE FROM fg_edge_target_documents WHERE client_id = \(id) AND query = \(query)",
            """
            INSERT INTO fg_edge_target_documents (client_id, query, path)
            SELECT \(id), \(query), unnest(\(target.documents.map { PostgresText.stored($0.canonical) })::text[]) ON CONFLICT DO NOTHING
            """,
        ]
    }
}
