import FiregateModel

/// A listen's or get's query object `q` (docs/wire/realtime-database.md, The query object) read as a `TreeQuery`:
/// `i` the index (`.key`, `.value`, a child path; none is `.priority`), `sp`/`sn`/`sin` the
/// start value, key and inclusiveness, `ep`/`en`/`ein` the end's, `l` the limit counted from
/// the end `vf` names (`l` first, `r` last). The SDK's `[MIN_NAME]`/`[MAX_NAME]` keys stand for
/// "before every key" and "after every key" at the bound's value.
public enum RealtimeQueryObject {
    static let minName = "[MIN_NAME]"
    static let maxName = "[MAX_NAME]"

    public static func parse(_ object: JSON) throws(FiregateError) -> TreeQuery {
        guard case .object(let members) = object else { throw invalid("The query \"q\" must be an object.") }
        for key in members.keys where !["i", "sp", "sn", "sin", "ep", "en", "ein", "l", "vf"].contains(key) {
            throw invalid("Unknown query parameter \"\(key)\".")
        }
        var query = TreeQuery(index: try index(members["i"]))
        if let value = members["sp"] {
            query.start = try bound(value, key: members["sn"], inclusive: members["sin"], index: query.index, isStart: true)
        } else if members["sn"] != nil {
            throw invalid("A start key \"sn\" needs a start value \"sp\".")
        }
        if let value = members["ep"] {
            query.end = try bound(value, key: members["en"], inclusive: members["ein"], index: query.index, isStart: false)
        } else if members["en"] != nil {
            throw invalid("An end key \"en\" needs an end value \"ep\".")
        }
        if let limit = members["l"] {
            guard let count = limit.integerLike, case .int = limit, count >= 0, count <= Int64(Int32.max) else {
                throw invalid("The limit \"l\" must be a non-negative integer.")
            }
            switch members["vf"]?.stringValue {
            case nil, "l"?: query.limit = .first(Int(count))
            case "r"?: query.limit = .last(Int(count))
            case let other?: throw invalid("\"vf\" must be \"l\" or \"r\", not \"\(other)\".")
            }
        }
        return query
    }

    static func index(_ json: JSON?) throws(FiregateError) -> TreeQuery.Index {
        guard let json else { return .priority }
        guard let name = json.stringValue else { throw invalid("The index \"i\" must be a string.") }
        switch name {
        case ".key": return .key
        case ".value": return .value
        case ".priority": return .priority
        default:
            guard let path = try? TreePath(validating: name, allowPriority: false), !path.isRoot else {
                throw invalid("The index \"i\" must be .key, .value, .priority or a child path.")
            }
            return .child(path)
        }
    }

    static func bound(_ value: JSON, key: JSON?, inclusive: JSON?, index: TreeQuery.Index, isStart: Bool) throws(FiregateError) -> TreeQuery.Bound {
        switch value {
        case .array, .object: throw invalid("A query bound must be null, a boolean, a number or a string.")
        default: break
        }
        let leaf = TreeLeaf(json: value)
        var inclusive = inclusive?.boolValue ?? true
        var name: String?
        if let key {
            guard let text = key.stringValue else { throw invalid("A query bound's key must be a string.") }
            switch text {
            // At the bound's value: every key from the start, or none past the end (or the reverse).
            case minName: inclusive = isStart ? inclusive : false
            case maxName: inclusive = isStart ? false : inclusive
            default: name = text
            }
        }
        switch index {
        case .key:
            guard case .string? = leaf else { throw invalid("Provided key index type is invalid, must be string") }
            // Ordered by key, the key is the value; `sn` repeats it at most.
            name = nil
        case .priority:
            if case .bool? = leaf { throw invalid("A priority bound must be null, a number or a string.") }
        case .value, .child:
            break
        }
        return TreeQuery.Bound(value: leaf, key: name, inclusive: inclusive)
    }

    static func invalid(_ message: String) -> FiregateError { .invalidArgument(message) }
}
