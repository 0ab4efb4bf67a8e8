import FiregateModel

/// An onDisconnect operation: what the server does at a location when the client's
/// connection drops. Values stay unresolved until then (server values resolve at execution).
/// Edge clients and WebSocket connections keep them alike.
public struct OnDisconnectOperation: Sendable {
    public enum Kind: Sendable {
        case set(JSON)
        case update([(TreePath, JSON)])
    }

    public let path: TreePath
    public let kind: Kind
    /// Accepted by the server (sent while connected); an edge client's queued ones are sent at
    /// its next connect.
    public var registered: Bool

    public init(path: TreePath, kind: Kind, registered: Bool) {
        self.path = path
        self.kind = kind
        self.registered = registered
    }

    public var name: String {
        switch kind {
        case .set(.null): "remove"
        case .set: "set"
        case .update: "update"
        }
    }

    /// The backend request that carries the operation out.
    public func request() throws(FiregateError) -> TreeWriteRequest {
        switch kind {
        case .set(let json):
            return TreeWriteRequest(path: path, operation: .set(try TreeWriteValue.prepare(json, at: path)))
        case .update(let entries):
            var prepared: [TreeUpdateEntry] = []
            for (relative, json) in entries {
                prepared.append(TreeUpdateEntry(path: relative, value: try TreeWriteValue.prepare(json, at: path.appending(relative))))
            }
            return TreeWriteRequest(path: path, operation: .update(prepared))
        }
    }

    /// An operation from its `json` (kept in a shared store for another replica to run).
    public init(json: JSON) throws(FiregateError) {
        guard let text = json.member("path")?.stringValue, let name = json.member("op")?.stringValue else {
            throw .invalidArgument("An onDisconnect operation needs a path and an op.")
        }
        path = try TreePath(validating: text)
        registered = json.member("state")?.stringValue != "queued"
        switch name {
        case "remove": kind = .set(.null)
        case "set": kind = .set(json.member("value") ?? .null)
        case "update":
            guard case .object(let members)? = json.member("value") else { throw .invalidArgument("An onDisconnect update needs an object.") }
            var entries: [(TreePath, JSON)] = []
            for (key, value) in members { entries.append((try TreePath(validating: key), value)) }
            kind = .update(entries)
        default: throw .invalidArgument("Unknown onDisconnect op \(name).")
        }
    }

    public var json: JSON {
        var json: JSON = ["path": .string(path.description), "op": .string(name), "state": .string(registered ? "registered" : "queued")]
        switch kind {
        case .set(let value) where value != .null: json = json.withMember("value", value)
        case .update(let entries): json = json.withMember("value", .members(entries.map { ($0.0.joined, $0.1) }))
        default: break
        }
        return json
    }
}

/// The client's onDisconnect operations in the order they were made. Each runs once, when
/// the connection drops after it was registered; the app registers again afterwards.
public struct OnDisconnectList: Sendable {
    public private(set) var operations: [OnDisconnectOperation] = []

    public init() {}

    public mutating func add(_ operation: OnDisconnectOperation) { operations.append(operation) }

    /// Cancels the operations at `path` and below; returns how many.
    public mutating func cancel(at path: TreePath) -> Int {
        let before = operations.count
        operations.removeAll { path.contains($0.path) }
        return before - operations.count
    }

    /// A connection was made: queued operations are sent and accepted.
    public mutating func registerQueued() {
        for i in operations.indices { operations[i].registered = true }
    }

    /// The connection dropped: the registered operations run now and are forgotten.
    public mutating func takeRegistered() -> [OnDisconnectOperation] {
        let taken = operations.filter(\.registered)
        operations.removeAll(where: \.registered)
        return taken
    }

    public mutating func removeAll() { operations.removeAll() }
}
