/// A value of the rules language (docs/wire/security-rules.md, Types and values): what expressions compute and
/// what documents and requests become.
/// Only the rare cases are boxed: a whole-enum `indirect` allocated a box for every bool and
/// string an evaluation produced.
public enum RulesValue: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case float(Double)
    case string(String)
    case bytes([UInt8])
    /// Segments of a path, without the leading `/`.
    case path([String])
    case list([RulesValue])
    case map([String: RulesValue])
    /// Distinct elements, in first-seen order.
    case set([RulesValue])
    case timestamp(seconds: Int64, nanos: Int32)
    case duration(seconds: Int64, nanos: Int32)
    case latlng(latitude: Double, longitude: Double)
    /// `a.diff(b)`: each key's status.
    indirect case mapDiff(added: [String], removed: [String], changed: [String], unchanged: [String])
    /// What a query's range filters prove of a field (`list` rules): comparisons with it hold
    /// only when the bounds prove them (`FirestoreRulesQuery`).
    indirect case bound(lower: RulesValue?, lowerInclusive: Bool, upper: RulesValue?, upperInclusive: Bool)

    /// The type name `is` tests and messages use.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .float: "float"
        case .string: "string"
        case .bytes: "bytes"
        case .path: "path"
        case .list: "list"
        case .map: "map"
        case .set: "set"
        case .timestamp: "timestamp"
        case .duration: "duration"
        case .latlng: "latlng"
        case .mapDiff: "map_diff"
        case .bound: "constraint"
        }
    }

    /// `value is name`: `number` covers int and float.
    public func isOfType(_ name: String) -> Bool {
        if case .bound(let lower, _, let upper, _) = self {
            let ends = [lower, upper].compactMap { $0 }
            return !ends.isEmpty && ends.allSatisfy { $0.isOfType(name) }
        }
        return name == typeName || (name == "number" && (typeName == "int" || typeName == "float"))
    }

    var number: Double? {
        switch self {
        case .int(let i): Double(i)
        case .float(let f): f
        default: nil
        }
    }
}

extension RulesValue: Equatable {
    /// Rules equality: int and float by value (`1 == 1.0`), sets regardless of order.
    public static func == (a: RulesValue, b: RulesValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.int(let x), .int(let y)): x == y
        case (.int, .float), (.float, .int), (.float, .float): a.number! == b.number!
        case (.string(let x), .string(let y)): x == y
        case (.bytes(let x), .bytes(let y)): x == y
        case (.path(let x), .path(let y)): x == y
        case (.list(let x), .list(let y)): x == y
        case (.map(let x), .map(let y)): x == y
        case (.set(let x), .set(let y)): x.count == y.count && x.allSatisfy { y.contains($0) }
        case (.timestamp(let s1, let n1), .timestamp(let s2, let n2)), (.duration(let s1, let n1), .duration(let s2, let n2)):
            s1 == s2 && n1 == n2
        case (.latlng(let a1, let o1), .latlng(let a2, let o2)): a1 == a2 && o1 == o2
        case (.mapDiff(let a1, let r1, let c1, let u1), .mapDiff(let a2, let r2, let c2, let u2)):
            Set(a1) == Set(a2) && Set(r1) == Set(r2) && Set(c1) == Set(c2) && Set(u1) == Set(u2)
        case (.bound(let l1, let li1, let u1, let ui1), .bound(let l2, let li2, let u2, let ui2)):
            l1 == l2 && li1 == li2 && u1 == u2 && ui1 == ui2
        default: false
        }
    }
}

/// Why an evaluation failed, in the emulator's words ("Null value error.", "Property x is
/// undefined on object."); an error is a value that `&&`/`||` may absorb (A7).
public struct RulesError: Error, Sendable, Equatable {
    public let message: String
    public let position: RulesPosition

    public init(_ message: String, at position: RulesPosition) {
        self.message = message
        self.position = position
    }
}

extension RulesValue: Hashable {
    /// Consistent with `==`: numbers hash by value, maps and sets regardless of order.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let b): hasher.combine(1); hasher.combine(b)
        case .int, .float: hasher.combine(2); hasher.combine(number!)
        case .string(let s): hasher.combine(3); hasher.combine(s)
        case .bytes(let b): hasher.combine(4); hasher.combine(b)
        case .path(let p): hasher.combine(5); hasher.combine(p)
        case .list(let items): hasher.combine(6); hasher.combine(items)
        case .map(let fields):
            hasher.combine(7)
            hasher.combine(fields.reduce(0) { sum, field in
                var one = Hasher()
                one.combine(field.key)
                one.combine(field.value)
                return sum &+ one.finalize()
            })
        case .set(let items): hasher.combine(8); hasher.combine(items.reduce(0) { $0 &+ $1.hashValue })
        case .timestamp(let s, let n): hasher.combine(9); hasher.combine(s); hasher.combine(n)
        case .duration(let s, let n): hasher.combine(10); hasher.combine(s); hasher.combine(n)
        case .latlng(let a, let o): hasher.combine(11); hasher.combine(a); hasher.combine(o)
        case .mapDiff(let a, let r, let c, let u): hasher.combine(12); hasher.combine(Set(a)); hasher.combine(Set(r)); hasher.combine(Set(c)); hasher.combine(Set(u))
        case .bound(let l, let li, let u, let ui): hasher.combine(13); hasher.combine(l); hasher.combine(li); hasher.combine(u); hasher.combine(ui)
        }
    }
}
