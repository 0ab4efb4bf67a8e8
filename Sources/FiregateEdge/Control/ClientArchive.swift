import FiregateModel
import FiregateStore

/// A client as an export archive holds it (`POST /emulator/v1/export {"clients":true}`):
///
/// `{"id", "settings", "network", "documents": [{"path", "exists", "committed", "fields",
/// "createTime", "updateTime", "sequenceNumber"}], "mutations": [{"id", "localWriteTime",
/// "writes": [Write…]}], "targets": [{"query", "sequenceNumber", "synced", "documents"}],
/// "indexes": [index definition…]}` — the same content a persistent client keeps in SQLite.
public struct ClientArchive: Sendable {
    public let id: String
    let settings: ClientSettings
    let network: NetworkConditions
    let snapshot: EdgeCacheStorage.Snapshot

    static func encode(id: String, settings: ClientSettings, network: NetworkConditions, remote: RemoteDocumentCache,
                       queue: MutationQueue, targets: TargetCache, indexes: JSON) -> JSON {
        let documents = remote.entries.sorted { ResourcePath.compare($0.key, $1.key) < 0 }.map { path, entry -> JSON in
            switch entry {
            case .found(let document, let committed):
                return ["path": .string(path.canonical), "exists": true, "committed": .bool(committed),
                        "fields": Value.fieldsJSON(document.fields),
                        "createTime": .string(document.createTime.rfc3339), "updateTime": .string(document.updateTime.rfc3339),
                        "sequenceNumber": .int(targets.documentSequence[path] ?? 0)]
            case .missing(let version):
                return ["path": .string(path.canonical), "exists": false, "updateTime": .string(version.rfc3339),
                        "sequenceNumber": .int(targets.documentSequence[path] ?? 0)]
            }
        }
        let mutations = queue.batches.map { batch -> JSON in
            ["id": .string(String(batch.id)), "localWriteTime": .string(batch.localWriteTime.rfc3339),
             "writes": .array(batch.writes.map { $0.json(database: settings.databaseID) })]
        }
        return [
            "id": .string(id), "settings": settings.json, "network": network.json, "indexes": indexes,
            "documents": .array(documents), "mutations": .array(mutations),
            "targets": .array(targets.targets.sorted { $0.key < $1.key }.map { query, target in
                ["query": .string(query), "sequenceNumber": .int(target.sequenceNumber), "synced": .bool(target.synced),
                 "documents": .array(target.documents.sorted { ResourcePath.compare($0, $1) < 0 }.map { .string($0.canonical) })]
            }),
        ]
    }

    /// Parses and checks one archived client; `field` names it in errors.
    public init(json: JSON, defaultProject: String, field: String) throws(FiregateError) {
        guard case .object = json, let id = json["id"]?.stringValue, !id.isEmpty, id.utf8.count <= 256 else {
            throw .invalidArgument("\(field) must be an object with a client id (1–256 bytes).")
        }
        self.id = id
        settings = try ClientSettings.parse(json["settings"] ?? [:], over: ClientSettings(project: defaultProject))
        var network = NetworkConditions()
        if let conditions = json["network"] { try network.update(conditions) }
        self.network = network
        var snapshot = EdgeCacheStorage.Snapshot(settings: settings.json)
        for (i, item) in (json["documents"]?.arrayValue ?? []).enumerated() {
            let at = "\(field).documents[\(i)]"
            guard let text = item["path"]?.stringValue, let exists = item["exists"]?.boolValue,
                  let updated = item["updateTime"]?.stringValue.flatMap({ Timestamp(rfc3339: $0) }) else {
                throw .invalidArgument("\(at) needs path, exists and updateTime.")
            }
            let path = ResourcePath(text.split(separator: "/").map(String.init))
            guard path.isDocument else { throw .invalidArgument("\(at).path is not a document path.") }
            let created = item["createTime"]?.stringValue.flatMap { Timestamp(rfc3339: $0) } ?? updated
            let fields = exists ? try Value.parseFields(item["fields"] ?? [:]) : [:]
            snapshot.documents.append(EdgeCacheStorage.StoredDocument(
                path: path, found: exists, committed: item["committed"]?.boolValue ?? false, fields: fields, createTime: created,
                updateTime: updated, sequenceNumber: item["sequenceNumber"]?.integerLike ?? 0))
        }
        for (i, item) in (json["mutations"]?.arrayValue ?? []).enumerated() {
            let at = "\(field).mutations[\(i)]"
            guard let batchID = item["id"]?.stringValue.flatMap({ Int64($0) }) ?? item["id"]?.integerLike, batchID > 0,
                  let time = item["localWriteTime"]?.stringValue.flatMap({ Timestamp(rfc3339: $0) }),
                  let writes = item["writes"]?.arrayValue else {
                throw .invalidArgument("\(at) needs id, localWriteTime and writes.")
            }
            for write in writes { _ = try Write(json: write, database: settings.databaseID) }
            snapshot.mutations.append((batchID, time, JSON.array(writes)))
        }
        for (i, item) in (json["targets"]?.arrayValue ?? []).enumerated() {
            guard let query = item["query"]?.stringValue, let documents = item["documents"]?.arrayValue else {
                throw .invalidArgument("\(field).targets[\(i)] needs query and documents.")
            }
            snapshot.targets.append(EdgeCacheStorage.StoredTarget(
                query: query, sequenceNumber: item["sequenceNumber"]?.integerLike ?? 0, synced: item["synced"]?.boolValue ?? true,
                documents: documents.compactMap(\.stringValue).map { ResourcePath($0.split(separator: "/").map(String.init)) }))
        }
        if let indexes = json["indexes"], indexes != .null {
            guard let items = indexes.arrayValue else { throw .invalidArgument("\(field).indexes must be an array.") }
            do {
                _ = try IndexConfiguration.parse(["indexes": .array(items)])
            } catch {
                throw .invalidArgument("\(field).\(error.message)")
            }
            snapshot.indexes = indexes
        }
        self.snapshot = snapshot
    }
}
