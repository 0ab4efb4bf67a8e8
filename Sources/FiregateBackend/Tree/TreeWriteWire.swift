import FiregateModel
import FiregateStore

/// A tree write and its outcome as JSON, for a replica that sends the write to the owner of its
/// namespace (`RemoteTreeWrites`). Unlike the REST methods, it carries everything the engine's
/// request has (a socket transaction's SDK hash, priorities, unresolved server values) and
/// everything its outcome has (a push's key, an update's stored entries, a conflict's current
/// value), so the write is the same at the owner as it would have been here.
///
/// Values travel in `format=export` form (`.priority`, `.value`); values holding server values
/// travel as written, resolved by the owner. Paths are arrays of keys.
public enum TreeWriteWire {
    /// `{"namespace","path","operation":"set|update|push","value"|"entries","ifMatch","ifSDKHash",
    /// "wantsETag","surface","client","progress"}`. The identity travels apart (as a bearer token).
    public static func request(namespace: String, _ request: TreeWriteRequest, caller: RulesCaller) -> JSON {
        var fields: [(String, JSON)] = [("namespace", .string(namespace)), ("path", keys(request.path))]
        switch request.operation {
        case .set(let value): fields += [("operation", "set"), ("value", json(value))]
        case .push(let value): fields += [("operation", "push"), ("value", json(value))]
        case .update(let entries):
            fields += [("operation", "update"),
                       ("entries", .array(entries.map { .members([("path", keys($0.path)), ("value", json($0.value))]) }))]
        }
        if let ifMatch = request.ifMatch { fields.append(("ifMatch", .string(ifMatch))) }
        if let ifSDKHash = request.ifSDKHash { fields.append(("ifSDKHash", .string(ifSDKHash))) }
        if request.wantsETag { fields.append(("wantsETag", true)) }
        if let progress = request.progress {
            fields.append(("progress", .members([("replica", .string(progress.replica)), ("connection", .string(progress.connection)),
                                                 ("done", .int(Int64(progress.done))), ("total", .int(Int64(progress.total)))])))
        }
        fields.append(("surface", .string(caller.surface)))
        if let client = caller.client { fields.append(("client", .string(client))) }
        return .members(fields)
    }

    /// A request read back: its namespace, the request, and the caller's surface and client.
    public static func request(_ json: JSON) throws(FiregateError) -> (namespace: String, request: TreeWriteRequest, surface: String, client: String?) {
        guard let namespace = json.member("namespace")?.stringValue, !namespace.isEmpty else { throw malformed("namespace") }
        let path = try treePath(json.member("path"), "path")
        let operation: TreeWriteRequest.Operation
        switch json.member("operation")?.stringValue {
        case "set": operation = .set(try value(json.member("value"), at: path))
        case "push": operation = .push(try value(json.member("value"), at: path))
        case "update":
            guard let items = json.member("entries")?.arrayValue else { throw malformed("entries") }
            var entries: [TreeUpdateEntry] = []
            for item in items {
                let relative = try treePath(item.member("path"), "entries.path")
                entries.append(TreeUpdateEntry(path: relative, value: try value(item.member("value"), at: path.appending(relative))))
            }
            operation = .update(entries)
        default: throw malformed("operation")
        }
        var request = TreeWriteRequest(path: path, operation: operation, ifMatch: json.member("ifMatch")?.stringValue,
                                       ifSDKHash: json.member("ifSDKHash")?.stringValue, wantsETag: json.member("wantsETag")?.boolValue ?? false)
        if let progress = json.member("progress") {
            guard let replica = progress.member("replica")?.stringValue, let connection = progress.member("connection")?.stringValue,
                  case .int(let done)? = progress.member("done"), case .int(let total)? = progress.member("total"),
                  done >= 0, total >= done, total <= Int64(Int32.max) else { throw malformed("progress") }
            request.progress = DisconnectProgress(replica: replica, connection: connection, done: Int(done), total: Int(total))
        }
        return (namespace, request, json.member("surface")?.stringValue ?? "rest", json.member("client")?.stringValue)
    }

    /// `{"written":{"path","value","entries","pushKey","etag"}}` or `{"conflict":{"current","etag"}}`.
    public static func outcome(_ outcome: TreeWriteOutcome) -> JSON {
        switch outcome {
        case .written(let result):
            var fields: [(String, JSON)] = [("path", keys(result.path)), ("value", result.value.exportJSON),
                                            ("entries", .array(result.entries.map { .members([("path", keys($0.path)), ("value", $0.node.exportJSON)]) }))]
            if let pushKey = result.pushKey { fields.append(("pushKey", .string(pushKey))) }
            if let etag = result.etag { fields.append(("etag", .string(etag))) }
            return .members([("written", .members(fields))])
        case .conflict(let current, let etag):
            return .members([("conflict", .members([("current", current.exportJSON), ("etag", .string(etag))]))])
        }
    }

    /// An outcome read back.
    public static func outcome(_ json: JSON) throws(FiregateError) -> TreeWriteOutcome {
        if let conflict = json.member("conflict") {
            guard let etag = conflict.member("etag")?.stringValue else { throw malformed("conflict.etag") }
            return .conflict(current: try node(conflict.member("current"), at: TreePath(keys: [])), etag: etag)
        }
        guard let written = json.member("written") else { throw malformed("written") }
        let path = try treePath(written.member("path"), "written.path")
        var entries: [TreePatchEntry] = []
        for item in written.member("entries")?.arrayValue ?? [] {
            let relative = try treePath(item.member("path"), "entries.path")
            entries.append(TreePatchEntry(path: relative, node: try node(item.member("value"), at: path.appending(relative))))
        }
        return .written(TreeWriteResult(path: path, value: try node(written.member("value"), at: path), entries: entries,
                                        pushKey: written.member("pushKey")?.stringValue, etag: written.member("etag")?.stringValue))
    }

    // MARK: Parts

    private static func keys(_ path: TreePath) -> JSON { .array(path.keys.map { .string($0) }) }

    private static func json(_ value: TreeWriteValue) -> JSON {
        switch value {
        case .node(let node): node.exportJSON
        case .needsServerValues(let json): json
        }
    }

    private static func treePath(_ json: JSON?, _ field: String) throws(FiregateError) -> TreePath {
        guard let items = json?.arrayValue else { throw malformed(field) }
        var keys: [String] = []
        for item in items {
            guard let key = item.stringValue, !key.isEmpty else { throw malformed(field) }
            keys.append(key)
        }
        return TreePath(keys: keys)
    }

    private static func value(_ json: JSON?, at path: TreePath) throws(FiregateError) -> TreeWriteValue {
        guard let json else { throw malformed("value") }
        return try TreeWriteValue.prepare(json, at: path)
    }

    private static func node(_ json: JSON?, at path: TreePath) throws(FiregateError) -> TreeNode {
        guard let json else { throw malformed("value") }
        return try TreeNodeDecoder.decode(json, at: path, serverValues: nil)
    }

    private static func malformed(_ field: String) -> FiregateError {
        .invalidArgument("A forwarded tree write needs a valid \(field).")
    }
}
