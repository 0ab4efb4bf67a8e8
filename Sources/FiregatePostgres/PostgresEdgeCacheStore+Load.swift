import FiregateModel
import FiregateStore
import PostgresNIO

/// Reading a persistent edge client back (the restart path), in one snapshot.
extension PostgresStore {
    public func loadEdgeCache(client rawClient: String) throws -> EdgeCacheStorage.Snapshot? {
        let id = PostgresText.stored(rawClient)
        return try read { session throws(FiregateError) -> EdgeCacheStorage.Snapshot? in
            guard let settingsRow = try session.query("SELECT settings FROM fg_edge_clients WHERE client_id = \(id)").rows.first else { return nil }
            var snapshot = EdgeCacheStorage.Snapshot(settings: try json(try decode(settingsRow, ByteBuffer.self)))
            for row in try session.query("""
                SELECT path, found, committed, fields, create_us, update_us, sequence FROM fg_edge_documents WHERE client_id = \(id)
                """).rows {
                let (path, found, committed, fields, created, updated, sequence) = try decode(row, (String, Bool, Bool, ByteBuffer?, Int64, Int64, Int64).self)
                let values: [String: Value]
                if let fields { values = try Value.parseFields(try json(fields)) } else { values = [:] }
                snapshot.documents.append(EdgeCacheStorage.StoredDocument(
                    path: ResourcePath(ResourcePath.segments(of: PostgresText.loaded(path))), found: found, committed: committed, fields: values,
                    createTime: Timestamp(microseconds: created), updateTime: Timestamp(microseconds: updated), sequenceNumber: sequence))
            }
            for row in try session.query("SELECT batch_id, local_write_us, writes, uid FROM fg_edge_mutations WHERE client_id = \(id) ORDER BY batch_id").rows {
                let (batchID, localWriteUs, writes, uid) = try decode(row, (Int64, Int64, ByteBuffer, String).self)
                snapshot.mutations.append((batchID, Timestamp(microseconds: localWriteUs), try json(writes)))
                if !uid.isEmpty { snapshot.mutationUsers[batchID] = PostgresText.loaded(uid) }
            }
            var keys: [String: [ResourcePath]] = [:]
            for row in try session.query("SELECT query, path FROM fg_edge_target_documents WHERE client_id = \(id)").rows {
                let (query, path) = try decode(row, (String, String).self)
                keys[query, default: []].append(ResourcePath(ResourcePath.segments(of: PostgresText.loaded(path))))
            }
            for row in try session.query("""
                SELECT query, sequence, synced, target_id, resume_token, snapshot_us FROM fg_edge_targets WHERE client_id = \(id)
                """).rows {
                let (query, sequence, synced, targetID, token, snapshotUs) = try decode(row, (String, Int64, Bool, Int64, String, Int64).self)
                snapshot.targets.append(EdgeCacheStorage.StoredTarget(query: PostgresText.loaded(query), sequenceNumber: sequence, synced: synced,
                                                                      documents: keys[query] ?? [], targetID: Int(targetID), resumeToken: token,
                                                                      snapshotVersion: Timestamp(microseconds: snapshotUs)))
            }
            if let row = try session.query("SELECT definitions FROM fg_edge_indexes WHERE client_id = \(id)").rows.first {
                snapshot.indexes = try? json(try decode(row, ByteBuffer.self))
            }
            if let row = try session.query("SELECT state FROM fg_edge_bundles WHERE client_id = \(id)").rows.first {
                snapshot.bundles = try? json(try decode(row, ByteBuffer.self))
            }
            return snapshot
        }
    }

    public func loadTreeCache(client rawClient: String) throws -> TreeCacheStorage.Snapshot {
        let id = PostgresText.stored(rawClient)
        return try read { session throws(FiregateError) -> TreeCacheStorage.Snapshot in
            var snapshot = TreeCacheStorage.Snapshot()
            for row in try session.query("SELECT path, value, priority FROM fg_edge_tree_cache WHERE client_id = \(id)").rows {
                let (path, value, priority) = try decode(row, (String, String?, String?).self)
                snapshot.rows.append(TreeStorageRow(path: PostgresText.loaded(path), value: value, priority: priority))
            }
            for row in try session.query("""
                SELECT id, path, parameters, last_use, complete, active, keys FROM fg_edge_tree_queries WHERE client_id = \(id)
                """).rows {
                let (queryID, path, parameters, lastUse, complete, active, keys) = try decode(row, (Int64, String, String, Int64, Bool, Bool, ByteBuffer).self)
                let keyList = (try? json(keys))?.arrayValue?.compactMap(\.stringValue) ?? []
                snapshot.queries.append(TreeCacheStorage.StoredQuery(id: queryID, path: PostgresText.loaded(path), parameters: PostgresText.loaded(parameters),
                                                                     lastUse: lastUse, complete: complete, active: active, keys: keyList))
            }
            for row in try session.query("SELECT body FROM fg_edge_tree_writes WHERE client_id = \(id) ORDER BY write_id").rows {
                if let body = try? json(try decode(row, ByteBuffer.self)) { snapshot.writes.append(body) }
            }
            if let row = try session.query("SELECT body FROM fg_edge_auth WHERE client_id = \(id)").rows.first {
                snapshot.auth = try? json(try decode(row, ByteBuffer.self))
            }
            return snapshot
        }
    }
}

/// Stored JSON, or DATA_LOSS naming the damage.
func json(_ buffer: ByteBuffer) throws(FiregateError) -> JSON {
    do {
        return try JSONParser.parse(buffer.readableBytesView)
    } catch {
        throw FiregateError(.dataLoss, "A stored JSON value is damaged: \(error)")
    }
}
