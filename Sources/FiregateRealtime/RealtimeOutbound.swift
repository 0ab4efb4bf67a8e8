import FiregateBackend
import FiregateModel

/// The messages a server sends (docs/wire/realtime-database.md: Control messages to Server pushes), as compact JSON. Values are
/// written in export form, so priorities reach the SDK as REST's `format=export` keeps them.
public enum RealtimeOutbound {
    /// The hello: server time, protocol version, host and the session id the client sends back
    /// as `ls` when it reconnects.
    public static func hello(serverMillis: Int64, host: String, sessionID: String) -> [UInt8] {
        control("h", ["ts": .int(serverMillis), "v": "5", "h": .string(host), "s": .string(sessionID)])
    }

    /// The answer to a ping.
    public static let pong: [UInt8] = control("o", .null)

    /// A server error the client logs (for input that names no request to answer).
    public static func serverError(_ message: String) -> [UInt8] { control("e", .string(message)) }

    /// The one reply to request `number`.
    public static func reply(_ number: Int64, status: String, data: JSON) -> [UInt8] {
        JSONWriter.bytes(["t": "d", "d": ["r": .int(number), "b": ["s": .string(status), "d": data]]])
    }

    /// A reply whose data is a tree value (a `g`et).
    public static func reply(_ number: Int64, value: TreeNode) -> [UInt8] {
        var out: [UInt8] = Array(#"{"t":"d","d":{"r":"#.utf8)
        out.append(contentsOf: String(number).utf8)
        out.append(contentsOf: #","b":{"s":"ok","d":"#.utf8)
        TreeNodeWriter.write(value, format: .export, style: .compact, into: &out)
        out.append(contentsOf: "}}}".utf8)
        return out
    }

    /// A data push for a listen at `location` (with its tag, if the listen is a tagged query):
    /// `d` overwrites a path, `m` merges relative paths under one.
    public static func push(_ update: TreeStreamUpdate, at location: TreePath, tag: Int64?) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(96)
        switch update {
        case .put(let relative, let node):
            out.append(contentsOf: #"{"t":"d","d":{"a":"d","b":{"p":"#.utf8)
            JSONWriter.writeString(location.appending(relative).joined, into: &out)
            out.append(contentsOf: #","d":"#.utf8)
            TreeNodeWriter.write(node, format: .export, style: .compact, into: &out)
        case .patch(let relative, let entries):
            out.append(contentsOf: #"{"t":"d","d":{"a":"m","b":{"p":"#.utf8)
            JSONWriter.writeString(location.appending(relative).joined, into: &out)
            out.append(contentsOf: #","d":"#.utf8)
            var fields: [(String, TreeNodeWriter.Member)] = entries.map { ($0.path.joined, .node($0.node)) }
            TreeNodeWriter.writeObject(&fields, format: .export, style: .compact, indent: 0, into: &out)
        }
        if let tag {
            out.append(contentsOf: #","t":"#.utf8)
            out.append(contentsOf: String(tag).utf8)
        }
        out.append(contentsOf: "}}}".utf8)
        return out
    }

    /// A listen the server ended (`c`): the SDK cancels it with `permission_denied`.
    public static func listenRevoked(path: TreePath, query: JSON?) -> [UInt8] {
        var body: [(String, JSON)] = [("p", .string(path.joined))]
        if let query { body.append(("q", query)) }
        return data("c", .members(body))
    }

    /// Auth revoked (`ac`): the SDK drops its token and reconnects.
    public static func authRevoked(status: String, reason: String) -> [UInt8] {
        data("ac", ["s": .string(status), "d": .string(reason)])
    }

    /// A security debug message (`sd`), printed by the SDK as `FIREBASE: …`.
    public static func securityDebug(_ message: String) -> [UInt8] { data("sd", ["msg": .string(message)]) }

    static func control(_ type: String, _ payload: JSON) -> [UInt8] {
        JSONWriter.bytes(["t": "c", "d": ["t": .string(type), "d": payload]])
    }

    static func data(_ action: String, _ body: JSON) -> [UInt8] {
        JSONWriter.bytes(["t": "d", "d": ["a": .string(action), "b": body]])
    }
}
