/// The BSON types of Firestore's MongoDB-compatible (Enterprise) databases, which clients send
/// as maps with one reserved key: `{"__oid__": "<24 hex>"}`, `{"__int__": 5}` (Int32),
/// `{"__decimal128__": "1.5"}`, `{"__binary__": <subtype byte + data>}`,
/// `{"__request_timestamp__": {"seconds", "increment"}}`, `{"__regex__": {"pattern", "options"}}`,
/// `{"__min__": null}`, `{"__max__": null}`. They are stored as those maps; what is theirs is
/// their validation (on write) and their place in the order (JS SDK type_order.ts).
public enum BSONKind: Sendable, Equatable {
    case minKey, maxKey, int32, decimal128, objectID, binary, timestamp, regex

    static let keys: [String: BSONKind] = [
        "__min__": .minKey, "__max__": .maxKey, "__int__": .int32, "__decimal128__": .decimal128, "__oid__": .objectID,
        "__binary__": .binary, "__request_timestamp__": .timestamp, "__regex__": .regex,
    ]

    /// The BSON kind of a map, when it is exactly one of those shapes.
    public init?(_ fields: [String: Value]) {
        guard fields.count == 1, let (key, value) = fields.first, let kind = BSONKind.keys[key] else { return nil }
        switch (kind, value) {
        case (.minKey, .null), (.maxKey, .null), (.int32, .integer), (.decimal128, .string), (.objectID, .string), (.binary, .bytes):
            self = kind
        case (.timestamp, .map(let inner)):
            guard case .integer? = inner["seconds"], case .integer? = inner["increment"], inner.count == 2 else { return nil }
            self = kind
        case (.regex, .map(let inner)):
            guard case .string? = inner["pattern"], case .string? = inner["options"], inner.count == 2 else { return nil }
            self = kind
        default:
            return nil
        }
    }

    /// Whether a map with a reserved key is a valid BSON value, after normalising it
    /// (Decimal128 infinities are spelled `Infinity`, regex options sorted). Throws for a BSON
    /// key with a bad payload; nil for a map that is not BSON at all.
    static func normalizedForWrite(_ fields: [String: Value]) throws(FiregateError) -> [String: Value]? {
        guard fields.count == 1, let (key, value) = fields.first, let kind = BSONKind.keys[key] else { return nil }
        guard BSONKind(fields) == kind else { throw .invalidArgument("Invalid value for the BSON type \(key).") }
        switch (kind, value) {
        case (.int32, .integer(let n)):
            guard n >= Int64(Int32.min), n <= Int64(Int32.max) else { throw .invalidArgument("Int32 value \(n) is out of range.") }
        case (.objectID, .string(let hex)):
            guard hex.utf8.count == 24, hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) }) else {
                throw .invalidArgument("Invalid ObjectId \"\(hex)\": expected 24 hexadecimal digits.")
            }
        case (.binary, .bytes(let bytes)):
            guard !bytes.isEmpty else { throw .invalidArgument("A BSON binary value needs its subtype byte.") }
        case (.decimal128, .string(let text)):
            guard let normal = BSONKind.normalizedDecimal(text) else { throw .invalidArgument("Invalid Decimal128 value \"\(text)\".") }
            return [key: .string(normal)]
        case (.regex, .map(var inner)):
            guard case .string(let options)? = inner["options"] else { break }
            for option in options where !"imsux".contains(option) {
                throw .invalidArgument("Invalid regex option '\(option)'. Supported options are 'i', 'm', 's', 'u', and 'x'.")
            }
            inner["options"] = .string(String(options.sorted()))
            return [key: .map(inner)]
        default: break
        }
        return fields
    }

    /// `inf`/`-inf`/`nan` in any case become `Infinity`/`-Infinity`/`NaN`; other text must be a number.
    static func normalizedDecimal(_ text: String) -> String? {
        switch text.lowercased() {
        case "inf", "+inf", "infinity", "+infinity": return "Infinity"
        case "-inf", "-infinity": return "-Infinity"
        case "nan", "+nan", "-nan": return "NaN"
        default: return Double(text) == nil ? nil : text
        }
    }

    /// The numeric value of an Int32 or Decimal128 (the number class they sort in).
    static func number(_ fields: [String: Value]) -> Value? {
        switch fields.first?.value {
        case .integer(let n)?: return .integer(n)
        case .string(let text)?:
            switch normalizedDecimal(text) {
            case "Infinity"?: return .double(.infinity)
            case "-Infinity"?: return .double(-.infinity)
            case "NaN"?: return .double(.nan)
            default: return Double(text).map(Value.double)
            }
        default: return nil
        }
    }
}
