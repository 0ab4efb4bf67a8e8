/// The operators of the rules language (docs/wire/security-rules.md, Operators) over values; a type
/// mismatch, a missing property, division by zero or an overflow is an error, with the
/// emulator's wording where known.
enum RulesOperators {
    static func nullError(_ at: RulesPosition) -> RulesError { RulesError("Null value error.", at: at) }

    static func member(_ base: RulesValue, _ name: String, _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch base {
        case .map(let fields):
            guard let value = fields[name] else { throw RulesError("Property \(name) is undefined on object.", at: at) }
            return value
        case .null: throw nullError(at)
        default: throw RulesError("Property \(name) is undefined on a \(base.typeName).", at: at)
        }
    }

    static func index(_ base: RulesValue, _ index: RulesValue, _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch (base, index) {
        case (.map(let fields), .string(let key)):
            guard let value = fields[key] else { throw RulesError("Property \(key) is undefined on object.", at: at) }
            return value
        case (.list(let items), .int(let i)):
            guard i >= 0, i < items.count else { throw RulesError("Index \(i) is out of range.", at: at) }
            return items[Int(i)]
        case (.string(let text), .int(let i)):
            let characters = Array(text)
            guard i >= 0, i < characters.count else { throw RulesError("Index \(i) is out of range.", at: at) }
            return .string(String(characters[Int(i)]))
        case (.path(let segments), .int(let i)):
            guard i >= 0, i < segments.count else { throw RulesError("Index \(i) is out of range.", at: at) }
            return .string(segments[Int(i)])
        case (.null, _): throw nullError(at)
        default: throw RulesError("Cannot index a \(base.typeName) with a \(index.typeName).", at: at)
        }
    }

    static func slice(_ base: RulesValue, _ start: RulesValue?, _ end: RulesValue?, _ at: RulesPosition) throws(RulesError) -> RulesValue {
        func bounds(_ count: Int) throws(RulesError) -> Range<Int> {
            var lower = 0, upper = count
            if let start {
                guard case .int(let i) = start else { throw RulesError("Slice bounds must be ints.", at: at) }
                lower = Int(i)
            }
            if let end {
                guard case .int(let j) = end else { throw RulesError("Slice bounds must be ints.", at: at) }
                upper = Int(j)
            }
            guard lower >= 0, upper <= count, lower <= upper else { throw RulesError("Slice [\(lower):\(upper)] is out of range.", at: at) }
            return lower..<upper
        }
        switch base {
        case .list(let items): return .list(Array(items[try bounds(items.count)]))
        case .string(let text):
            let characters = Array(text)
            return .string(String(characters[try bounds(characters.count)]))
        case .null: throw nullError(at)
        default: throw RulesError("Cannot slice a \(base.typeName).", at: at)
        }
    }

    static func unary(_ op: String, _ operand: RulesValue, _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch (op, operand) {
        case ("!", .bool(let b)): return .bool(!b)
        case ("-", .int(let i)):
            guard i != .min else { throw RulesError("Integer overflow.", at: at) }
            return .int(-i)
        case ("-", .float(let f)): return .float(-f)
        case (_, .null): throw nullError(at)
        default: throw RulesError("Operator \(op) does not apply to a \(operand.typeName).", at: at)
        }
    }

    static func binary(_ op: String, _ left: RulesValue, _ right: RulesValue, _ at: RulesPosition) throws(RulesError) -> RulesValue {
        let comparison = ["<", "<=", ">", ">=", "==", "!="].contains(op)
        if comparison, case .bound = left { return .bool(proven(op, left, right)) }
        if comparison, case .bound = right { return .bool(proven(mirrored(op), right, left)) }
        switch op {
        case "==": return .bool(left == right)
        case "!=": return .bool(left != right)
        case "in": return .bool(try contains(right, left, at))
        case "<", "<=", ">", ">=":
            guard let order = try compare(left, right, at) else { return .bool(false) }
            switch op {
            case "<": return .bool(order < 0)
            case "<=": return .bool(order <= 0)
            case ">": return .bool(order > 0)
            default: return .bool(order >= 0)
            }
        default: return try arithmetic(op, left, right, at)
        }
    }

    /// `a op b` as `b op' a`.
    static func mirrored(_ op: String) -> String {
        ["<": ">", "<=": ">=", ">": "<", ">=": "<="][op] ?? op
    }

    /// Whether every value within `bound` satisfies `bound op value` (otherwise the query could
    /// return a document the rule denies, so the comparison is false).
    static func proven(_ op: String, _ bound: RulesValue, _ value: RulesValue) -> Bool {
        guard case .bound(let lower, let lowerInclusive, let upper, let upperInclusive) = bound else { return false }
        let at = RulesPosition(line: 0, column: 0)
        func order(_ end: RulesValue?) -> Int? {
            guard let end, let result = try? compare(end, value, at) else { return nil }
            return result
        }
        let fromLower = order(lower), fromUpper = order(upper)
        let above = fromLower.map { $0 > 0 || ($0 == 0 && !lowerInclusive) } ?? false   // every value > value
        let atLeast = fromLower.map { $0 >= 0 } ?? false                               // every value >= value
        let below = fromUpper.map { $0 < 0 || ($0 == 0 && !upperInclusive) } ?? false   // every value < value
        let atMost = fromUpper.map { $0 <= 0 } ?? false                                // every value <= value
        switch op {
        case ">": return above
        case ">=": return atLeast
        case "<": return below
        case "<=": return atMost
        case "!=": return above || below
        case "==": return atLeast && atMost && lowerInclusive && upperInclusive
        default: return false
        }
    }

    static func contains(_ collection: RulesValue, _ element: RulesValue, _ at: RulesPosition) throws(RulesError) -> Bool {
        switch collection {
        case .list(let items), .set(let items): return items.contains(element)
        case .map(let fields):
            guard case .string(let key) = element else { return false }
            return fields[key] != nil
        case .null: throw nullError(at)
        default: throw RulesError("Operator in does not apply to a \(collection.typeName).", at: at)
        }
    }

    /// -1, 0 or 1; numbers by value, strings (by code point) and bytes lexicographically, times
    /// in order; nil when unordered (NaN), which makes every ordering comparison false.
    static func compare(_ left: RulesValue, _ right: RulesValue, _ at: RulesPosition) throws(RulesError) -> Int? {
        func sign<T: Comparable>(_ a: T, _ b: T) -> Int { a < b ? -1 : (a == b ? 0 : 1) }
        switch (left, right) {
        case (.int(let a), .int(let b)): return sign(a, b)
        case (.int, .float), (.float, .int), (.float, .float):
            let a = left.number!, b = right.number!
            guard !a.isNaN, !b.isNaN else { return nil }
            return sign(a, b)
        case (.string(let a), .string(let b)): return a == b ? 0 : (a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars) ? -1 : 1)
        case (.bytes(let a), .bytes(let b)): return a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
        case (.timestamp(let s1, let n1), .timestamp(let s2, let n2)), (.duration(let s1, let n1), .duration(let s2, let n2)):
            return s1 != s2 ? sign(s1, s2) : sign(n1, n2)
        case (.null, _), (_, .null): throw nullError(at)
        default: throw RulesError("Cannot compare a \(left.typeName) with a \(right.typeName).", at: at)
        }
    }

    static func arithmetic(_ op: String, _ left: RulesValue, _ right: RulesValue, _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch (op, left, right) {
        case (_, .int(let a), .int(let b)):
            let (result, overflow): (Int64, Bool)
            switch op {
            case "+": (result, overflow) = a.addingReportingOverflow(b)
            case "-": (result, overflow) = a.subtractingReportingOverflow(b)
            case "*": (result, overflow) = a.multipliedReportingOverflow(by: b)
            case "/", "%":
                guard b != 0 else { throw RulesError("Division by zero.", at: at) }
                (result, overflow) = op == "/" ? a.dividedReportingOverflow(by: b) : a.remainderReportingOverflow(dividingBy: b)
            default: throw RulesError("Unknown operator \(op).", at: at)
            }
            guard !overflow else { throw RulesError("Integer overflow.", at: at) }
            return .int(result)
        case (_, .int, .float), (_, .float, .int), (_, .float, .float):
            let a = left.number!, b = right.number!
            switch op {
            case "+": return .float(a + b)
            case "-": return .float(a - b)
            case "*": return .float(a * b)
            case "/": return .float(a / b)
            case "%": return .float(a.truncatingRemainder(dividingBy: b))
            default: throw RulesError("Unknown operator \(op).", at: at)
            }
        case ("+", .string(let a), .string(let b)): return .string(a + b)
        case ("+", .list(let a), .list(let b)): return .list(a + b)
        case ("+", .timestamp(let s, let n), .duration(let ds, let dn)), ("+", .duration(let ds, let dn), .timestamp(let s, let n)):
            return try RulesTime.timestamp(s, Int64(n), plus: ds, Int64(dn), at)
        case ("-", .timestamp(let s, let n), .duration(let ds, let dn)):
            return try RulesTime.timestamp(s, Int64(n), plus: -ds, -Int64(dn), at)
        case ("-", .timestamp(let s1, let n1), .timestamp(let s2, let n2)):
            return RulesTime.duration(s1 - s2, Int64(n1) - Int64(n2))
        case ("+", .duration(let s1, let n1), .duration(let s2, let n2)): return RulesTime.duration(s1 + s2, Int64(n1) + Int64(n2))
        case ("-", .duration(let s1, let n1), .duration(let s2, let n2)): return RulesTime.duration(s1 - s2, Int64(n1) - Int64(n2))
        case (_, .null, _), (_, _, .null): throw nullError(at)
        default: throw RulesError("Operator \(op) does not apply to a \(left.typeName) and a \(right.typeName).", at: at)
        }
    }
}

/// Timestamps and durations as seconds and nanoseconds, normalised (0 ≤ nanos < 1e9).
enum RulesTime {
    static func duration(_ seconds: Int64, _ nanos: Int64) -> RulesValue {
        let total = seconds + nanos / 1_000_000_000, rest = nanos % 1_000_000_000
        return rest < 0 ? .duration(seconds: total - 1, nanos: Int32(rest + 1_000_000_000)) : .duration(seconds: total, nanos: Int32(rest))
    }

    static func timestamp(_ seconds: Int64, _ nanos: Int64, plus ds: Int64, _ dn: Int64, _ at: RulesPosition) throws(RulesError) -> RulesValue {
        guard case .duration(let s, let n) = duration(seconds + ds, nanos + dn) else { fatalError("duration() makes durations") }
        guard s >= -62_135_596_800, s <= 253_402_300_799 else { throw RulesError("Timestamp out of range.", at: at) }
        return .timestamp(seconds: s, nanos: n)
    }
}
