import FiregateModel

/// Realtime Database rules (docs/wire/security-rules.md, Realtime Database rules): a tree of `.read`, `.write`,
/// `.validate` and `.indexOn` by location, each rule `true`/`false` or an expression, with one
/// `$wildcard` child per level.
public struct RealtimeRuleset: Sendable {
    public final class Node: Sendable {
        let read: Rule?
        let write: Rule?
        let validate: Rule?
        public let indexOn: [String]
        let children: [String: Node]
        let wildcard: (name: String, node: Node)?

        init(read: Rule?, write: Rule?, validate: Rule?, indexOn: [String], children: [String: Node], wildcard: (name: String, node: Node)?) {
            (self.read, self.write, self.validate, self.indexOn, self.children, self.wildcard) = (read, write, validate, indexOn, children, wildcard)
        }

        /// The node for a child key: the named child, else the wildcard (binding its name).
        func child(_ key: String) -> (Node, binding: (String, String)?)? {
            if let named = children[key] { return (named, nil) }
            if let wildcard { return (wildcard.node, (wildcard.name, key)) }
            return nil
        }
    }

    enum Rule: Sendable {
        case constant(Bool)
        case expression(RealtimeRulesExpression, source: String)
    }

    public let root: Node
    public let source: String

    /// Parses the rules file: JSON whose strings may be preceded by `//` and `/* */` comments.
    public static func parse(_ source: String) throws(RulesIssue) -> RealtimeRuleset {
        let json: JSON
        do {
            json = try JSONParser.parse(RealtimeRuleset.strippingComments(source))
        } catch {
            throw RulesIssue("Invalid JSON: \(error.message).", at: position(of: error.offset, in: source))
        }
        guard case .object(let top) = json, let rules = top["rules"], top.count == 1 else {
            throw RulesIssue("The rules must be an object with one key, \"rules\".", at: RulesPosition(line: 1, column: 1))
        }
        return RealtimeRuleset(root: try node(rules, path: "/rules", variables: []), source: source)
    }

    private static func node(_ json: JSON, path: String, variables: Set<String>) throws(RulesIssue) -> Node {
        guard case .object(let fields) = json else { throw issue("\(path) must be an object") }
        var read: Rule?, write: Rule?, validate: Rule?, indexOn: [String] = []
        var children: [String: Node] = [:], wildcard: (String, Node)?
        for (key, value) in fields {
            switch key {
            case ".read": read = try rule(value, "\(path)/.read", variables)
            case ".write": write = try rule(value, "\(path)/.write", variables)
            case ".validate": validate = try rule(value, "\(path)/.validate", variables)
            case ".indexOn":
                switch value {
                case .string(let one): indexOn = [one]
                case .array(let items): indexOn = items.compactMap(\.stringValue)
                default: throw issue("\(path)/.indexOn must be a string or a list of strings")
                }
            default:
                guard !key.hasPrefix(".") else { throw issue("\(path)/\(key) is not a rule (.read, .write, .validate or .indexOn)") }
                if key.hasPrefix("$") {
                    guard wildcard == nil else { throw issue("\(path) has two $ children") }
                    guard !variables.contains(key) else { throw issue("\(path)/\(key) repeats a $ variable of its path") }
                    wildcard = (key, try node(value, path: "\(path)/\(key)", variables: variables.union([key])))
                } else {
                    children[key] = try node(value, path: "\(path)/\(key)", variables: variables)
                }
            }
        }
        return Node(read: read, write: write, validate: validate, indexOn: indexOn, children: children, wildcard: wildcard)
    }

    private static func rule(_ json: JSON, _ path: String, _ variables: Set<String>) throws(RulesIssue) -> Rule {
        switch json {
        case .bool(let b): return .constant(b)
        case .string(let source):
            do {
                return .expression(try RealtimeRulesParser.parse(source, variables: variables), source: source)
            } catch {
                throw issue("\(path): \(error.message)")
            }
        default: throw issue("\(path) must be a boolean or an expression string")
        }
    }

    private static func issue(_ message: String) -> RulesIssue { RulesIssue(message + ".", at: RulesPosition(line: 1, column: 1)) }

    static func position(of offset: Int, in source: String) -> RulesPosition {
        var line = 1, column = 1
        for byte in source.utf8.prefix(offset) {
            if byte == UInt8(ascii: "\n") { (line, column) = (line + 1, 1) } else { column += 1 }
        }
        return RulesPosition(line: line, column: column)
    }

    /// `//` and `/* */` comments outside strings become spaces (offsets, hence positions, stay).
    static func strippingComments(_ source: String) -> String {
        var out: [UInt8] = [], bytes = Array(source.utf8), i = 0, inString = false
        while i < bytes.count {
            let c = bytes[i]
            if inString {
                out.append(c)
                if c == UInt8(ascii: "\\"), i + 1 < bytes.count { out.append(bytes[i + 1]); i += 2; continue }
                if c == UInt8(ascii: "\"") { inString = false }
                i += 1
            } else if c == UInt8(ascii: "\""), true {
                inString = true
                out.append(c)
                i += 1
            } else if c == UInt8(ascii: "/"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "/") {
                while i < bytes.count, bytes[i] != UInt8(ascii: "\n") { out.append(UInt8(ascii: " ")); i += 1 }
            } else if c == UInt8(ascii: "/"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "*") {
                out += [UInt8(ascii: " "), UInt8(ascii: " ")]
                i += 2
                while i < bytes.count, !(bytes[i] == UInt8(ascii: "*") && i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "/")) {
                    out.append(bytes[i] == UInt8(ascii: "\n") ? bytes[i] : UInt8(ascii: " "))
                    i += 1
                }
                if i < bytes.count { out += [UInt8(ascii: " "), UInt8(ascii: " ")]; i += 2 }
            } else {
                out.append(c)
                i += 1
            }
        }
        bytes = out
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension RealtimeRuleset {
    /// The SDK's warning when a query orders by a child (or by value) that `.indexOn` at the
    /// queried location does not name, as the database says it (B2); nil when indexed, or when
    /// the order needs no index (key, priority).
    public func missingIndexWarning(at path: [String], orderBy: String?) -> String? {
        guard let orderBy else { return nil }
        var node: Node? = root
        for key in path { node = node?.child(key)?.0 }
        if let indexed = node?.indexOn, indexed.contains(orderBy) { return nil }
        let location = "/" + path.joined(separator: "/")
        return "Using an unspecified index. Your data will be downloaded and filtered on the client. Consider adding "
            + "\".indexOn\": \"\(orderBy)\" at \(location) to your security rules for better performance."
    }
}
