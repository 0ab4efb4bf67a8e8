import FiregateModel
import OrderedCollections

/// One entry of the operations log: `{"seq","time","kind",…}` on `GET /emulator/v1/events`.
public struct OperationEvent: Sendable {
    public let seq: Int64
    public let time: Timestamp
    public let detail: Detail

    /// What happened. Cases keep raw values; `json` renders them when someone listens.
    public enum Detail: Sendable {
        /// A durable commit to a document database; `documents` are its changed paths.
        case commit(database: DatabaseID, commitTime: Timestamp, documents: [ResourcePath])
        /// A durable write to a tree namespace.
        case treeWrite(namespace: String, path: String, op: String)
        case network(client: String, online: Bool)
        /// created, deleted, restarted, terminated, configured, persistenceCleared.
        case client(client: String, action: String)
        /// `writeID` as the client's pendingWrites names it (`7`, or `t7` for a tree write).
        case writeAcknowledged(client: String, writeID: String)
        /// `decision`: the rules decision that refused it, when the rules did.
        case writeRejected(client: String, writeID: String, error: FiregateError, decision: String? = nil)
        case reset(scope: String, fields: [(String, String)])
        case imported(documents: Int, namespaces: Int, clients: Int)
        /// The clock was set or advanced; the event's time is the clock's new reading.
        case clock(frozen: Bool)
        case garbageCollected(client: String, documentsRemoved: Int, targetsRemoved: Int)
        case onDisconnect(client: String, path: String, op: String)
        /// A real SDK connection (docs/architecture.md, Real SDK connections) opened, or closed with `reason`.
        case connection(id: String, protocol: String, opened: Bool, reason: String?)
    }

    /// Paths listed per commit event; the count says how many there were.
    static let listedDocuments = 10

    public var kind: String {
        switch detail {
        case .commit: "commit"
        case .treeWrite: "treeWrite"
        case .network: "network"
        case .client: "client"
        case .writeAcknowledged: "writeAcknowledged"
        case .writeRejected: "writeRejected"
        case .reset: "reset"
        case .imported: "import"
        case .clock: "clock"
        case .garbageCollected: "gc"
        case .onDisconnect: "onDisconnect"
        case .connection(_, _, let opened, _): opened ? "connectionOpened" : "connectionClosed"
        }
    }

    public var json: JSON {
        var members: [(String, JSON)] = [("seq", .int(seq)), ("time", .string(time.rfc3339)), ("kind", .string(kind))]
        switch detail {
        case let .commit(database, commitTime, documents):
            members += [
                ("project", .string(database.project)), ("database", .string(database.database)),
                ("commitTime", .string(commitTime.rfc3339)), ("changedDocuments", .int(Int64(documents.count))),
                ("documents", .array(documents.prefix(OperationEvent.listedDocuments).map { .string($0.description) })),
            ]
        case let .treeWrite(namespace, path, op):
            members += [("namespace", .string(namespace)), ("path", .string(path)), ("op", .string(op))]
        case let .network(client, online):
            members += [("client", .string(client)), ("online", .bool(online))]
        case let .client(client, action):
            members += [("client", .string(client)), ("action", .string(action))]
        case let .writeAcknowledged(client, writeID):
            members += [("client", .string(client)), ("writeId", .string(writeID))]
        case let .writeRejected(client, writeID, error, decision):
            members += [("client", .string(client)), ("writeId", .string(writeID)),
                        ("status", .string(error.status.rawValue)), ("message", .string(error.message))]
            if let decision { members.append(("decision", .string(decision))) }
        case let .reset(scope, fields):
            members.append(("scope", .string(scope)))
            members += fields.map { ($0.0, .string($0.1)) }
        case let .imported(documents, namespaces, clients):
            members += [("documents", .int(Int64(documents))), ("namespaces", .int(Int64(namespaces))), ("clients", .int(Int64(clients)))]
        case let .clock(frozen):
            members.append(("frozen", .bool(frozen)))
        case let .garbageCollected(client, documentsRemoved, targetsRemoved):
            members += [("client", .string(client)), ("documentsRemoved", .int(Int64(documentsRemoved))),
                        ("targetsRemoved", .int(Int64(targetsRemoved)))]
        case let .onDisconnect(client, path, op):
            members += [("client", .string(client)), ("path", .string(path)), ("op", .string(op))]
        case let .connection(id, proto, _, reason):
            members += [("connection", .string(id)), ("protocol", .string(proto))]
            if let reason { members.append(("reason", .string(reason))) }
        }
        return .object(OrderedDictionary(members, uniquingKeysWith: { _, last in last }))
    }
}
