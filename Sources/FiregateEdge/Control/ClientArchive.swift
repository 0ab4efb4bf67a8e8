import FiregateBackend
import FiregateModel
import FiregateStore

/// A client as an export archive holds it (`POST /emulator/v1/export {"clients":true}`):
///
/// `{"id", "settings", "network", "documents": [{"path", "exists", "committed", "fields",
/// "createTime", "updateTime", "sequenceNumber"}], "mutations": [{"id", "localWriteTime",
/// "writes": [Write…], "uid"?}], "targets": [{"query", "sequenceNumber", "synced", "documents", "targetId", "resumeToken", "snapshotVersion"}],
/// "indexes": [index definition…], "tree": {"cache": <tree, export form>, "queries": [{"path",
/// "parameters", "lastUse", "complete", "active", "keys"}], "writes": [{"id","path","set"|"merge"}]},
/// "auth": {"uid","token","expiresAt"}, "bundles": {"bundles": {id: createTime}, "namedQueries": [NamedQuery…],
/// "heldTargets": [query…]}}` — the same content a persistent client keeps in SQLite.
public struct ClientArchive: Sendable {
    public let id: String
    let settings: ClientSettings
    let network: NetworkConditions
    let snapshot: EdgeCacheStorage.Snapshot
    let tree: TreeCacheStorage.Snapshot

    static func encode(id: String, settings: ClientSettings, network: NetworkConditions, remote: RemoteDocumentCache,
                       queue: MutationQueue, parked: [String: MutationQueue], targets: TargetCache, indexes: JSON, tree: JSON?,
                       auth: ClientAuth?, bundles: JSON? = nil) -> JSON {
        let documents = remote.entries.sorted { ResourcePath.compare($0.key, $1.key) < 0 }.map { path, entry -> JSON in
            switch entry {
            case .found(let document, let committed):
                return ["path": .string(path.canonical), "exists": true, "committed": .bool(committed),
                        "fields": Value.fieldsJSON(document.fields),
                        "createTime": .string(document.createTime.rfc3339), "updateTime": .string(document.updateTime.rfc3339),
                        "sequenceNumber": .int(targets.documentSequence[path] ?? 0)]
            case .missing(let version, let committed):
                return ["path": .string(path.canonical), "exists": false, "committed": .bool(committed), "updateTime": .string(version.rfc3339),
                        "sequenceNumber": .int(targets.documentSequence[path] ?? 0)]
            }
        }
        // Every user's queue: the signed-in user's and the others' (`uid`), in id order.
        var owned = queue.batches.map { (auth?.uid ?? "", $0) }
        for (user, other) in parked { owned += other.batches.map { (user, $0) } }
        let mutations = owned.sorted { $0.1.id < $1.1.id }.map { user, batch -> JSON in
            var json: JSON = ["id": .string(String(batch.id)), "localWriteTime": .string(batch.localWriteTime.rfc3339),
                              "writes": .array(batch.writes.map { $0.json(database: settings.databaseID) })]
            if !user.isEmpty { json = json.withMember("uid", .string(user)) }
            return json
        }
        var archive: JSON = [
            "id": .string(id), "settings": settings.json, "network": network.json, "indexes": indexes,
            "documents": .array(documents), "mutations": .array(mutations),
            "targets": .array(targets.targets.sorted { $0.key < $1.key }.map { query, target in
                ["query": .string(query), "sequenceNumber": .int(target.sequenceNumber), "synced": .bool(target.synced),
                 "documents": .array(target.documents.sorted { ResourcePath.compare($0, $1) < 0 }.map { .string($0.canonical) }),
                 "targetId": .int(Int64(target.targetID)), "resumeToken": .string(target.resumeToken),
                 "snapshotVersion": .string(target.snapshotVersion.rfc3339)]
            }),
        ]
        if let tree { archive = archive.withMember("tree", tree) }
        if let bundles { archive = archive.withMember("bundles", bundles) }
        if let auth { archive = archive.withMember("auth", auth.json) }
        return archive
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
            if let uid = item["uid"]?.stringValue, !uid.isEmpty { snapshot.mutationUsers[batchID] = uid }
        }
        for (i, item) in (json["targets"]?.arrayValue ?? []).enumerated() {
            guard let query = item["query"]?.stringValue, let documents = item["documents"]?.arrayValue else {
                throw .invalidArgument("\(field).targets[\(i)] needs query and documents.")
            }
            snapshot.targets.append(EdgeCacheStorage.StoredTarget(
                query: query, sequenceNumber: item["sequenceNumber"]?.integerLike ?? 0, synced: item["synced"]?.boolValue ?? true,
                documents: documents.compactMap(\.stringValue).map { ResourcePath($0.split(separator: "/").map(String.init)) },
                targetID: Int(item["targetId"]?.integerLike ?? 0), resumeToken: item["resumeToken"]?.stringValue ?? "",
                snapshotVersion: item["snapshotVersion"]?.stringValue.flatMap { Timestamp(rfc3339: $0) } ?? .zero))
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
        if let bundles = json["bundles"], bundles != .null {
            guard case .object = bundles else { throw .invalidArgument("\(field).bundles must be an object.") }
            snapshot.bundles = bundles
        }
        self.snapshot = snapshot
        tree = try ClientArchive.parseTree(json["tree"], auth: json["auth"], field: field)
    }

    /// The archived tree side: cache, tracked queries and queued writes, each checked.
    static func parseTree(_ json: JSON?, auth: JSON?, field: String) throws(FiregateError) -> TreeCacheStorage.Snapshot {
        var tree = TreeCacheStorage.Snapshot()
        if let auth, auth != .null {
            guard (try? ClientAuth.parse(auth)) != nil else { throw .invalidArgument("\(field).auth is not a valid auth object.") }
            tree.auth = auth
        }
        guard let json, json != .null else { return tree }
        do {
            let root = try TreeNodeDecoder.decode(json["cache"] ?? .null, at: .root, serverValues: nil)
            tree.rows = TreeStorageEncoding.rows(for: root, at: .root)
        } catch {
            throw .invalidArgument("\(field).tree.cache: \(error.message)")
        }
        for (i, item) in (json["queries"]?.arrayValue ?? []).enumerated() {
            guard let path = item["path"]?.stringValue, let parameters = item["parameters"]?.stringValue,
                  TreeQuerySpec(path: path, parameters: parameters) != nil, let id = item["id"]?.integerLike ?? Int64(i + 1) as Int64? else {
                throw .invalidArgument("\(field).tree.queries[\(i)] needs a path and valid query parameters.")
            }
            tree.queries.append(.init(id: id, path: path, parameters: parameters, lastUse: item["lastUse"]?.integerLike ?? 0,
                                      complete: item["complete"]?.boolValue ?? false, active: false,
                                      keys: item["keys"]?.arrayValue?.compactMap(\.stringValue) ?? []))
        }
        let local = LocalTreeValues(cache: TreeServerCache(), writes: TreeWriteTree(), nowMillis: 0)
        for (i, body) in (json["writes"]?.arrayValue ?? []).enumerated() {
            do {
                _ = try TreeUserWrite.restored(body, local: local)
            } catch {
                throw .invalidArgument("\(field).tree.writes[\(i)]: \(error.message)")
            }
            tree.writes.append(body)
        }
        return tree
    }
}
