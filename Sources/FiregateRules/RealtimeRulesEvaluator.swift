import FiregateModel
import Foundation

/// The tree as rules read it: values at paths before (`root`, `data`) or after (`newData`) the
/// operation, in export form (nil where nothing is).
public protocol RealtimeRulesData {
    func value(at path: [String], after: Bool) -> JSON?
}

extension RealtimeRulesData {
    /// Whether something is at `path`. (Not `value(…) != nil`: JSON takes `nil` as its null,
    /// so that comparison is with `.null` and holds for a missing value.)
    func holdsValue(at path: [String], after: Bool) -> Bool {
        guard let value = value(at: path, after: after) else { return false }
        return value != .null
    }
}

/// A value of a Realtime Database rule: JSON-like primitives, objects (`auth`, `query`), and
/// snapshots of the tree.
enum RealtimeRulesValue: Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case object([String: RealtimeRulesValue])
    case list([RealtimeRulesValue])
    case snapshot(path: [String], after: Bool)
    case regex(String, caseInsensitive: Bool)

    init(_ json: JSON) {
        switch json {
        case .null: self = .null
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .number(Double(i))
        case .double(let d): self = .number(d)
        case .string(let s): self = .string(s)
        case .array(let items): self = .list(items.map(RealtimeRulesValue.init))
        case .object(let fields): self = .object(Dictionary(uniqueKeysWithValues: fields.map { ($0.key, RealtimeRulesValue($0.value)) }))
        }
    }
}

/// Evaluates rule expressions as production does (B5): a member of null is null; `+` joins
/// strings; ordering needs two numbers or two strings; division by zero is NaN; a wrong type
/// elsewhere is an error, which fails the rule it is in.
struct RealtimeRulesEvaluator {
    let data: any RealtimeRulesData
    /// The rule's location, and its `$` bindings.
    let location: [String]
    let variables: [String: String]
    let auth: RealtimeRulesValue
    let now: Double
    let query: RealtimeRulesValue

    func evaluate(_ expression: RealtimeRulesExpression) throws(RulesError) -> RealtimeRulesValue {
        switch expression {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .number(let n): return .number(n)
        case .string(let s): return .string(s)
        case .regex(let pattern, let flag): return .regex(pattern, caseInsensitive: flag)
        case .array(let items): return .list(try items.map { item throws(RulesError) in try evaluate(item) })
        case .identifier(let name):
            switch name {
            case "auth": return auth
            case "now": return .number(now)
            case "root": return .snapshot(path: [], after: false)
            case "data": return .snapshot(path: location, after: false)
            case "newData": return .snapshot(path: location, after: true)
            case "query": return query
            default: return variables[name].map(RealtimeRulesValue.string) ?? .null
            }
        case .member(let base, let name):
            let target = try evaluate(base)
            switch target {
            case .null: return .null
            case .object(let fields): return fields[name] ?? .null
            case .string(let s) where name == "length": return .number(Double(s.count))
            default: throw fail("No property \(name) on this value")
            }
        case .index(let base, let key):
            guard case .object(let fields) = try evaluate(base), case .string(let name) = try evaluate(key) else { throw fail("Invalid index") }
            return fields[name] ?? .null
        case .call(let callee, let arguments):
            let values = try arguments.map { a throws(RulesError) in try evaluate(a) }
            switch callee {
            case .member(let receiver, let name): return try method(try evaluate(receiver), name, values)
            case .index(let receiver, .string(let name)): return try method(try evaluate(receiver), name, values)
            default: throw fail("Not a method")
            }
        case .unary("!", let operand):
            guard case .bool(let b) = try evaluate(operand) else { throw fail("! needs a boolean") }
            return .bool(!b)
        case .unary(_, let operand):
            guard case .number(let n) = try evaluate(operand) else { throw fail("- needs a number") }
            return .number(-n)
        case .binary("&&", let left, let right):
            guard case .bool(let l) = try evaluate(left) else { throw fail("&& needs booleans") }
            guard l else { return .bool(false) }
            guard case .bool(let r) = try evaluate(right) else { throw fail("&& needs booleans") }
            return .bool(r)
        case .binary("||", let left, let right):
            guard case .bool(let l) = try evaluate(left) else { throw fail("|| needs booleans") }
            guard !l else { return .bool(true) }
            guard case .bool(let r) = try evaluate(right) else { throw fail("|| needs booleans") }
            return .bool(r)
        case .binary(let op, let left, let right):
            return try binary(op, try evaluate(left), try evaluate(right))
        case .conditional(let condition, let yes, let no):
            guard case .bool(let c) = try evaluate(condition) else { throw fail("?: needs a boolean condition") }
            return try evaluate(c ? yes : no)
        }
    }

    private func fail(_ message: String) -> RulesError { RulesError(message + ".", at: RulesPosition(line: 1, column: 1)) }

    private func binary(_ op: String, _ left: RealtimeRulesValue, _ right: RealtimeRulesValue) throws(RulesError) -> RealtimeRulesValue {
        switch (op, left, right) {
        case ("==", _, _): return .bool(try comparable(left) == comparable(right))
        case ("!=", _, _): return .bool(try comparable(left) != comparable(right))
        case ("+", .string(let a), _): return .string(a + (try text(right)))
        case ("+", _, .string(let b)): return .string((try text(left)) + b)
        case (_, .number(let a), .number(let b)):
            switch op {
            case "+": return .number(a + b)
            case "-": return .number(a - b)
            case "*": return .number(a * b)
            case "/": return .number(b == 0 ? .nan : a / b)
            case "%": return .number(b == 0 ? .nan : a.truncatingRemainder(dividingBy: b))
            case "<": return .bool(a < b)
            case "<=": return .bool(a <= b)
            case ">": return .bool(a > b)
            default: return .bool(a >= b)
            }
        case ("<", .string(let a), .string(let b)): return .bool(a < b)
        case ("<=", .string(let a), .string(let b)): return .bool(a <= b)
        case (">", .string(let a), .string(let b)): return .bool(a > b)
        case (">=", .string(let a), .string(let b)): return .bool(a >= b)
        default: throw fail("Operator \(op) does not apply to these values")
        }
    }

    /// Snapshots cannot be compared; everything else compares by type and value.
    private func comparable(_ value: RealtimeRulesValue) throws(RulesError) -> RealtimeRulesValue {
        if case .snapshot = value { throw fail("Snapshots cannot be compared") }
        return value
    }

    private func text(_ value: RealtimeRulesValue) throws(RulesError) -> String {
        switch value {
        case .string(let s): return s
        case .number(let n): return n.isNaN ? "NaN" : (n == n.rounded() && abs(n) < 1e15 ? String(Int64(n)) : String(n))
        case .bool(let b): return String(b)
        default: throw fail("Cannot join this value to a string")
        }
    }

    // MARK: Methods

    private func method(_ target: RealtimeRulesValue, _ name: String, _ arguments: [RealtimeRulesValue]) throws(RulesError) -> RealtimeRulesValue {
        switch target {
        case .snapshot(let path, let after): return try snapshotMethod(path, after, name, arguments)
        case .string(let s): return try stringMethod(s, name, arguments)
        default: throw fail("No method \(name) on this value")
        }
    }

    private func relative(_ argument: RealtimeRulesValue?) throws(RulesError) -> [String] {
        guard case .string(let path)? = argument else { throw fail("A child path must be a string") }
        return path.split(separator: "/").map(String.init)
    }

    private func snapshotMethod(_ path: [String], _ after: Bool, _ name: String, _ arguments: [RealtimeRulesValue]) throws(RulesError) -> RealtimeRulesValue {
        let node = data.value(at: path, after: after)
        switch (name, arguments.count) {
        case ("val", 0):
            guard let node else { return .null }
            return RealtimeRulesValue(node.strippingPriority)
        case ("child", 1): return .snapshot(path: path + (try relative(arguments[0])), after: after)
        case ("parent", 0):
            guard !path.isEmpty else { throw fail("The root has no parent") }
            return .snapshot(path: Array(path.dropLast()), after: after)
        case ("exists", 0): return .bool(node.map { $0 != .null } ?? false)
        case ("hasChild", 1): return .bool(data.holdsValue(at: path + (try relative(arguments[0])), after: after))
        case ("hasChildren", 0):
            guard case .object(let fields)? = node else { return .bool(false) }
            return .bool(fields.keys.contains { $0 != ".priority" && $0 != ".value" })
        case ("hasChildren", 1):
            guard case .list(let keys) = arguments[0] else { throw fail("hasChildren takes a list of keys") }
            for key in keys {
                guard case .string(let child) = key else { throw fail("hasChildren takes a list of strings") }
                if !data.holdsValue(at: path + [child], after: after) { return .bool(false) }
            }
            return .bool(true)
        case ("getPriority", 0):
            guard case .object(let fields)? = node, let priority = fields[".priority"] else { return .null }
            return RealtimeRulesValue(priority)
        case ("isNumber", 0), ("isString", 0), ("isBoolean", 0):
            let value = node.map { RealtimeRulesValue($0.strippingPriority) } ?? .null
            switch (name, value) {
            case ("isNumber", .number), ("isString", .string), ("isBoolean", .bool): return .bool(true)
            default: return .bool(false)
            }
        default: throw fail("No snapshot method \(name) with \(arguments.count) arguments")
        }
    }

    private func stringMethod(_ s: String, _ name: String, _ arguments: [RealtimeRulesValue]) throws(RulesError) -> RealtimeRulesValue {
        switch (name, arguments.first, arguments.count) {
        case ("contains", .string(let x)?, 1): return .bool(s.contains(x))
        case ("beginsWith", .string(let x)?, 1): return .bool(s.hasPrefix(x))
        case ("endsWith", .string(let x)?, 1): return .bool(s.hasSuffix(x))
        case ("toLowerCase", nil, 0): return .string(s.lowercased())
        case ("toUpperCase", nil, 0): return .string(s.uppercased())
        case ("replace", .string(let x)?, 2):
            guard case .string(let replacement) = arguments[1] else { throw fail("replace takes two strings") }
            return .string(x.isEmpty ? s : s.replacingOccurrences(of: x, with: replacement))
        case ("matches", .regex(let pattern, let insensitive)?, 1):
            guard s.utf8.count <= RulesRegex.maxInputLength, let regex = try? LinearRegex(pattern, caseInsensitive: insensitive) else {
                throw fail("Invalid regular expression, or a string too long for one")
            }
            return .bool(regex.firstMatch(in: s))
        default: throw fail("No string method \(name) for these arguments")
        }
    }
}

extension JSON {
    /// A node without its `.priority` (a leaf with a priority is `{".value", ".priority"}`).
    var strippingPriority: JSON {
        guard case .object(var fields) = self else { return self }
        if let value = fields[".value"] { return value }
        fields[".priority"] = nil
        return .object(fields)
    }
}
