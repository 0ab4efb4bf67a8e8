import Foundation

/// The standard library (docs/wire/security-rules.md, Standard library): methods on values, the `math`,
/// `duration`, `timestamp` and `latlng` namespaces, and the conversions.
enum RulesLibrary {
    static let namespaces: Set<String> = ["math", "duration", "timestamp", "latlng"]

    static func wrongArguments(_ name: String, _ at: RulesPosition) -> RulesError {
        RulesError("Invalid arguments to \(name)().", at: at)
    }

    // MARK: Methods

    static func method(_ target: RulesValue, _ name: String, _ arguments: [RulesValue], _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch (target, name, RulesArguments(arguments)) {
        case (.null, _, _): throw RulesOperators.nullError(at)
        // sizes
        case (.string(let s), "size", .none): return .int(Int64(s.count))
        case (.list(let l), "size", .none), (.set(let l), "size", .none): return .int(Int64(l.count))
        case (.map(let m), "size", .none): return .int(Int64(m.count))
        case (.bytes(let b), "size", .none): return .int(Int64(b.count))
        // strings
        case (.string(let s), "lower", .none): return .string(s.lowercased())
        case (.string(let s), "upper", .none): return .string(s.uppercased())
        case (.string(let s), "trim", .none): return .string(s.trimmingCharacters(in: .whitespaces))
        case (.string(let s), "matches", .one(.string(let pattern))): return .bool(try regex(pattern, on: s, at).wholeMatch(s))
        case (.string(let s), "split", .one(.string(let pattern))): return .list(try regex(pattern, on: s, at).split(s).map(RulesValue.string))
        case (.string(let s), "replace", .two(.string(let pattern), .string(let replacement))):
            return .string(try regex(pattern, on: s, at).replace(s, with: replacement))
        case (.string(let s), "toUtf8", .none): return .bytes(Array(s.utf8))
        // lists and sets
        case (.list(let l), "concat", .one(.list(let other))): return .list(l + other)
        case (.list(let l), "join", .one(.string(let separator))):
            var parts: [String] = []
            for item in l {
                guard case .string(let text) = item else { throw RulesError("join() needs a list of strings.", at: at) }
                parts.append(text)
            }
            return .string(parts.joined(separator: separator))
        case (.list(let l), "removeAll", .one(.list(let other))): return .list(l.filter { !other.contains($0) })
        case (.list(let l), "toSet", .none): return .set(distinct(l))
        case (.list(let l), "hasAll", .one(let other)), (.set(let l), "hasAll", .one(let other)):
            return .bool(try elements(other, name, at).allSatisfy { l.contains($0) })
        case (.list(let l), "hasAny", .one(let other)), (.set(let l), "hasAny", .one(let other)):
            return .bool(try elements(other, name, at).contains { l.contains($0) })
        case (.list(let l), "hasOnly", .one(let other)), (.set(let l), "hasOnly", .one(let other)):
            let allowed = try elements(other, name, at)
            return .bool(l.allSatisfy { allowed.contains($0) })
        case (.set(let l), "union", .one(let other)): return .set(distinct(l + (try elements(other, name, at))))
        case (.set(let l), "intersection", .one(let other)):
            let with = try elements(other, name, at)
            return .set(l.filter { with.contains($0) })
        case (.set(let l), "difference", .one(let other)):
            let without = try elements(other, name, at)
            return .set(l.filter { !without.contains($0) })
        // maps
        case (.map(let m), "keys", .none): return .list(m.keys.sorted().map(RulesValue.string))
        case (.map(let m), "values", .none): return .list(m.keys.sorted().map { m[$0]! })
        case (.map(let m), "get", .two(let key, let fallback)): return try lookup(m, key, fallback, at)
        case (.map(let m), "diff", .one(.map(let other))):
            var added: [String] = [], removed: [String] = [], changed: [String] = [], unchanged: [String] = []
            for (key, value) in m {
                if let old = other[key] { if old == value { unchanged.append(key) } else { changed.append(key) } } else { added.append(key) }
            }
            for key in other.keys where m[key] == nil { removed.append(key) }
            return .mapDiff(added: added.sorted(), removed: removed.sorted(), changed: changed.sorted(), unchanged: unchanged.sorted())
        case (.mapDiff(let added, _, _, _), "addedKeys", .none): return .set(added.map(RulesValue.string))
        case (.mapDiff(_, let removed, _, _), "removedKeys", .none): return .set(removed.map(RulesValue.string))
        case (.mapDiff(_, _, let changed, _), "changedKeys", .none): return .set(changed.map(RulesValue.string))
        case (.mapDiff(_, _, _, let unchanged), "unchangedKeys", .none): return .set(unchanged.map(RulesValue.string))
        case (.mapDiff(let added, let removed, let changed, _), "affectedKeys", .none):
            return .set((added + removed + changed).sorted().map(RulesValue.string))
        // times
        case (.timestamp(let s, let n), "toMillis", .none): return .int(s * 1000 + Int64(n) / 1_000_000)
        case (.timestamp(let s, let n), _, .none):
            if let part = timestampPart(s, n, name) { return part }
            throw RulesError("Function \(name) is not defined on a timestamp.", at: at)
        case (.duration(let s, _), "seconds", .none): return .int(s)
        case (.duration(_, let n), "nanos", .none): return .int(Int64(n))
        case (.latlng(let latitude, _), "latitude", .none): return .float(latitude)
        case (.latlng(_, let longitude), "longitude", .none): return .float(longitude)
        case (.latlng(let a1, let o1), "distance", .one(.latlng(let a2, let o2))): return .float(haversine(a1, o1, a2, o2))
        // bytes and paths
        case (.bytes(let b), "toBase64", .none): return .string(Data(b).base64EncodedString())
        case (.bytes(let b), "toHexString", .none): return .string(b.map { String(format: "%02X", $0) }.joined())
        case (.path(let segments), "bind", .one(.map(let values))):
            return .path(segments.map { segment in
                if segment.hasPrefix("$("), segment.hasSuffix(")"), case .string(let bound)? = values[String(segment.dropFirst(2).dropLast())] {
                    return bound
                }
                return segment
            })
        default:
            throw RulesError("Function \(name) is not defined on a \(target.typeName) with \(arguments.count) argument(s).", at: at)
        }
    }

    private static func elements(_ value: RulesValue, _ name: String, _ at: RulesPosition) throws(RulesError) -> [RulesValue] {
        switch value {
        case .list(let items), .set(let items): return items
        default: throw RulesError("\(name)() needs a list or a set.", at: at)
        }
    }

    private static func distinct(_ items: [RulesValue]) -> [RulesValue] {
        var out: [RulesValue] = []
        for item in items where !out.contains(item) { out.append(item) }
        return out
    }

    /// `map.get(key, default)`: `key` a string, or a list of keys for a nested lookup.
    private static func lookup(_ map: [String: RulesValue], _ key: RulesValue, _ fallback: RulesValue, _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch key {
        case .string(let name): return map[name] ?? fallback
        case .list(let names):
            var current = RulesValue.map(map)
            for name in names {
                guard case .string(let text) = name else { throw wrongArguments("get", at) }
                guard case .map(let fields) = current, let next = fields[text] else { return fallback }
                current = next
            }
            return current
        default: throw wrongArguments("get", at)
        }
    }

    private static func timestampPart(_ seconds: Int64, _ nanos: Int32, _ name: String) -> RulesValue? {
        let date = Date(timeIntervalSince1970: TimeInterval(seconds))
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        switch name {
        case "year": return .int(Int64(parts.year!))
        case "month": return .int(Int64(parts.month!))
        case "day": return .int(Int64(parts.day!))
        case "hours": return .int(Int64(parts.hour!))
        case "minutes": return .int(Int64(parts.minute!))
        case "seconds": return .int(Int64(parts.second!))
        case "nanos": return .int(Int64(nanos))
        case "dayOfWeek": return .int(Int64((parts.weekday! + 5) % 7 + 1))  // Monday 1 … Sunday 7
        case "dayOfYear": return .int(Int64(calendar.ordinality(of: .day, in: .year, for: date)!))
        case "date": return .timestamp(seconds: seconds - seconds.mod(86_400), nanos: 0)
        case "time": return .duration(seconds: seconds.mod(86_400), nanos: nanos)
        default: return nil
        }
    }

    private static func haversine(_ lat1: Double, _ lng1: Double, _ lat2: Double, _ lng2: Double) -> Double {
        let r = 6_371_000.0, rad = Double.pi / 180
        let dLat = (lat2 - lat1) * rad, dLng = (lng2 - lng1) * rad
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * rad) * cos(lat2 * rad) * sin(dLng / 2) * sin(dLng / 2)
        return 2 * r * asin(min(1, sqrt(a)))
    }

    // MARK: Namespaces and conversions

    static func namespaced(_ namespace: String, _ name: String, _ arguments: [RulesValue], _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch (namespace, name, RulesArguments(arguments)) {
        case ("math", "abs", .one(.int(let i))): return .int(i == .min ? i : abs(i))
        case ("math", "abs", .one(.float(let f))): return .float(abs(f))
        case ("math", "ceil", .one(let n)) where n.number != nil: return .float(n.number!.rounded(.up))
        case ("math", "floor", .one(let n)) where n.number != nil: return .float(n.number!.rounded(.down))
        case ("math", "round", .one(let n)) where n.number != nil: return .float(n.number!.rounded(.toNearestOrAwayFromZero))
        case ("math", "sqrt", .one(let n)) where n.number != nil: return .float(n.number!.squareRoot())
        case ("math", "pow", .two(let a, let b)) where a.number != nil && b.number != nil: return .float(pow(a.number!, b.number!))
        case ("math", "isNaN", .one(.float(let f))): return .bool(f.isNaN)
        case ("math", "isInfinite", .one(.float(let f))): return .bool(f.isInfinite)
        case ("duration", "value", .two(.int(let n), .string(let unit))):
            let nanos: [String: Int64] = ["w": 604_800_000_000_000, "d": 86_400_000_000_000, "h": 3_600_000_000_000, "m": 60_000_000_000,
                                         "s": 1_000_000_000, "ms": 1_000_000, "ns": 1]
            guard let scale = nanos[unit] else { throw RulesError("Unknown duration unit '\(unit)'.", at: at) }
            let (total, overflow) = n.multipliedReportingOverflow(by: scale)
            guard !overflow else { throw RulesError("Duration out of range.", at: at) }
            return RulesTime.duration(total / 1_000_000_000, total % 1_000_000_000)
        case ("duration", "time", .four(.int(let h), .int(let m), .int(let s), .int(let ns))):
            return RulesTime.duration(h * 3600 + m * 60 + s, ns)
        case ("duration", "abs", .one(.duration(let s, let n))):
            return s < 0 ? RulesTime.duration(-s, -Int64(n)) : .duration(seconds: s, nanos: n)
        case ("timestamp", "value", .one(.int(let ms))):
            return try RulesTime.timestamp(0, 0, plus: ms.floorDiv(1000), ms.mod(1000) * 1_000_000, at)
        case ("timestamp", "date", .three(.int(let y), .int(let m), .int(let d))):
            var parts = DateComponents()
            (parts.year, parts.month, parts.day) = (Int(y), Int(m), Int(d))
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            guard let date = calendar.date(from: parts) else { throw wrongArguments("timestamp.date", at) }
            return .timestamp(seconds: Int64(date.timeIntervalSince1970), nanos: 0)
        case ("latlng", "value", .two(let a, let o)) where a.number != nil && o.number != nil:
            guard (-90...90).contains(a.number!), (-180...180).contains(o.number!) else { throw RulesError("Latitude or longitude out of range.", at: at) }
            return .latlng(latitude: a.number!, longitude: o.number!)
        default: throw RulesError("Function \(namespace).\(name) does not take these arguments.", at: at)
        }
    }

    static func conversion(_ name: String, _ arguments: [RulesValue], _ at: RulesPosition) throws(RulesError) -> RulesValue {
        switch (name, RulesArguments(arguments)) {
        case ("string", .one(let value)): return .string(stringForm(value))
        case ("int", .one(.int(let i))): return .int(i)
        case ("int", .one(.float(let f))):
            guard f.isFinite, f >= -9.2e18, f <= 9.2e18 else { throw RulesError("Cannot convert \(f) to an int.", at: at) }
            return .int(Int64(f))
        case ("int", .one(.string(let s))):
            guard let i = Int64(s) else { throw RulesError("Cannot convert '\(s)' to an int.", at: at) }
            return .int(i)
        case ("float", .one(let n)) where n.number != nil: return .float(n.number!)
        case ("float", .one(.string(let s))):
            guard let f = Double(s) else { throw RulesError("Cannot convert '\(s)' to a float.", at: at) }
            return .float(f)
        case ("path", .one(.string(let s))): return .path(s.split(separator: "/").map(String.init))
        default: throw RulesError("Function \(name) is not defined for these arguments.", at: at)
        }
    }

    /// `string(x)`: `"true"`, `"1"`, `"2.0"`, `"null"`.
    static func stringForm(_ value: RulesValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let b): b ? "true" : "false"
        case .int(let i): String(i)
        case .float(let f): f == f.rounded() && abs(f) < 1e15 ? String(format: "%.1f", f) : String(f)
        case .string(let s): s
        case .path(let segments): "/" + segments.joined(separator: "/")
        default: debugText(value)
        }
    }

    /// `debug(x)`'s line, as the emulator logs it: the value with its type (`string_value: "alice"`).
    static func debugText(_ value: RulesValue) -> String {
        switch value {
        case .null: "null_value: NULL_VALUE"
        case .bool(let b): "bool_value: \(b)"
        case .int(let i): "int_value: \(i)"
        case .float(let f): "float_value: \(f)"
        case .string(let s): "string_value: \"\(s)\""
        case .bytes(let b): "bytes_value: \"\(b.map { String(format: "\\x%02x", $0) }.joined())\""
        case .path(let segments): "path_value { segments: \(segments.map { "\"\($0)\"" }.joined(separator: ", ")) }"
        case .list(let items): "list_value { \(items.map(debugText).joined(separator: ", ")) }"
        case .set(let items): "set_value { \(items.map(debugText).joined(separator: ", ")) }"
        case .map(let fields): "map_value { \(fields.keys.sorted().map { "\($0): \(debugText(fields[$0]!))" }.joined(separator: ", ")) }"
        case .timestamp(let s, let n): "timestamp_value { seconds: \(s) nanos: \(n) }"
        case .duration(let s, let n): "duration_value { seconds: \(s) nanos: \(n) }"
        case .latlng(let a, let o): "latlng_value { latitude: \(a) longitude: \(o) }"
        case .mapDiff: "map_diff_value"
        case .bound(let lower, _, let upper, _):
            "constraint_value { lower: \(lower.map(debugText) ?? "none") upper: \(upper.map(debugText) ?? "none") }"
        }
    }
}

extension Int64 {
    func mod(_ m: Int64) -> Int64 { ((self % m) + m) % m }
    func floorDiv(_ d: Int64) -> Int64 { (self - mod(d)) / d }
}

/// A call's arguments as a value to match on (Swift has no array patterns).
enum RulesArguments {
    case none
    case one(RulesValue)
    case two(RulesValue, RulesValue)
    case three(RulesValue, RulesValue, RulesValue)
    case four(RulesValue, RulesValue, RulesValue, RulesValue)
    case many([RulesValue])

    init(_ values: [RulesValue]) {
        switch values.count {
        case 0: self = .none
        case 1: self = .one(values[0])
        case 2: self = .two(values[0], values[1])
        case 3: self = .three(values[0], values[1], values[2])
        case 4: self = .four(values[0], values[1], values[2], values[3])
        default: self = .many(values)
        }
    }
}
