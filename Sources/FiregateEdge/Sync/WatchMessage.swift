import FiregateModel

/// One message of a client's watch stream, in the shape of Firestore's `ListenResponse`
/// (google.firestore.v1), plus the stream's end. A scripted watch receives these from the test
/// (`POST /clients/{id}/watch`), so a test says exactly what "the server" tells the client.
public enum WatchMessage: Sendable, Equatable {
    public enum TargetChangeKind: String, Sendable {
        case noChange = "NO_CHANGE", add = "ADD", remove = "REMOVE", current = "CURRENT", reset = "RESET"
    }

    /// `targetChange`: `readTime` set on a NO_CHANGE with no target ids is a consistent
    /// snapshot of every target (the SDK raises events only then).
    case targetChange(kind: TargetChangeKind, targetIDs: [Int], cause: FiregateError?, resumeToken: String, readTime: Timestamp?)
    /// `documentChange`: the document as of its update time, in `targetIDs`, out of `removedTargetIDs`.
    case documentChange(Document, targetIDs: [Int], removedTargetIDs: [Int])
    /// `documentDelete`: the document no longer exists (as of `readTime`, else the next snapshot).
    case documentDelete(ResourcePath, removedTargetIDs: [Int], readTime: Timestamp?)
    /// `documentRemove`: the document left these targets; nothing is said about its contents.
    case documentRemove(ResourcePath, removedTargetIDs: [Int])
    /// `filter`: the target holds `count` documents on the server; `unchangedNames` is the
    /// bloom filter of their names, when sent.
    case filter(targetID: Int, count: Int, unchangedNames: JSON?)
    /// Not a ListenResponse: the stream fails with `error` (nil: closes cleanly), as a dropped
    /// connection does. `reconnect` reopens it at once (the SDK's backoff timer elapsing).
    case streamClose(error: FiregateError?, reconnect: Bool)

    /// Parses one message; anything malformed is INVALID_ARGUMENT naming the member.
    public init(json: JSON, database: DatabaseID) throws(FiregateError) {
        guard let members = json.objectValue, members.count == 1, let name = members.keys.first, let body = members.values.first else {
            throw .invalidArgument("A watch message is an object with one of targetChange, documentChange, documentDelete, documentRemove, filter, streamClose.")
        }
        switch name {
        case "targetChange":
            let kindText = body.member("targetChangeType")?.stringValue ?? "NO_CHANGE"
            guard let kind = TargetChangeKind(rawValue: kindText) else {
                throw .invalidArgument("targetChange.targetChangeType must be NO_CHANGE, ADD, REMOVE, CURRENT or RESET.")
            }
            let readTime = try WatchMessage.timestamp(body.member("readTime"), "targetChange.readTime")
            let cause = try body.member("cause").map { json throws(FiregateError) in try WatchMessage.status(json, "targetChange.cause") }
            self = .targetChange(kind: kind, targetIDs: try WatchMessage.ids(body.member("targetIds"), "targetChange.targetIds"), cause: cause,
                                 resumeToken: body.member("resumeToken")?.stringValue ?? "", readTime: readTime)
        case "documentChange":
            guard let doc = body.member("document") else { throw .invalidArgument("documentChange needs a document.") }
            self = .documentChange(try Document(json: doc, database: database, at: "documentChange.document"),
                                   targetIDs: try WatchMessage.ids(body.member("targetIds"), "documentChange.targetIds"),
                                   removedTargetIDs: try WatchMessage.ids(body.member("removedTargetIds"), "documentChange.removedTargetIds"))
        case "documentDelete", "documentRemove":
            guard let text = body.member("document")?.stringValue, let path = try? database.path(fromName: text), path.isDocument else {
                throw .invalidArgument("\(name).document must be a document name of \(database.documentsRoot).")
            }
            let removed = try WatchMessage.ids(body.member("removedTargetIds"), "\(name).removedTargetIds")
            if name == "documentRemove" {
                self = .documentRemove(path, removedTargetIDs: removed)
            } else {
                self = .documentDelete(path, removedTargetIDs: removed, readTime: try WatchMessage.timestamp(body.member("readTime"), "documentDelete.readTime"))
            }
        case "filter":
            guard let target = body.member("targetId")?.integerLike, let count = (body.member("count") ?? .int(0)).integerLike, count >= 0 else {
                throw .invalidArgument("filter needs a targetId and a count ≥ 0.")
            }
            self = .filter(targetID: Int(target), count: Int(count), unchangedNames: body.member("unchangedNames"))
        case "streamClose":
            let error = try body.member("error").map { json throws(FiregateError) in try WatchMessage.status(json, "streamClose.error") }
            self = .streamClose(error: error, reconnect: body.member("reconnect")?.boolValue ?? true)
        default:
            throw .invalidArgument("Unknown watch message \"\(name)\"; expected targetChange, documentChange, documentDelete, documentRemove, filter or streamClose.")
        }
    }

    private static func ids(_ json: JSON?, _ at: String) throws(FiregateError) -> [Int] {
        guard let json, json != .null else { return [] }
        guard let items = json.arrayValue else { throw .invalidArgument("\(at) must be an array of target ids.") }
        var ids: [Int] = []
        for item in items {
            guard let id = item.integerLike, id > 0, id <= Int64(Int32.max) else { throw .invalidArgument("\(at) must hold positive target ids.") }
            ids.append(Int(id))
        }
        return ids
    }

    private static func timestamp(_ json: JSON?, _ at: String) throws(FiregateError) -> Timestamp? {
        guard let json, json != .null else { return nil }
        guard let text = json.stringValue, let time = Timestamp(rfc3339: text) else { throw .invalidArgument("\(at) must be an RFC 3339 timestamp.") }
        return time
    }

    /// A google.rpc.Status: `{"code": n, "message": "…"}` (code as the gRPC number or name).
    private static func status(_ json: JSON, _ at: String) throws(FiregateError) -> FiregateError {
        let status: Status?
        if let number = json.member("code")?.integerLike {
            status = Status(code: Int(number))
        } else {
            status = json.member("code")?.stringValue.flatMap(Status.init(rawValue:))
        }
        guard let status, status != .ok else { throw .invalidArgument("\(at).code must be a gRPC status other than OK.") }
        return FiregateError(status, json.member("message")?.stringValue ?? "")
    }
}
