import Foundation
import OrderedCollections

/// The typed Value JSON of Firestore REST v1 (proto3 JSON mapping), both directions.
extension Value {
    /// Parses `{"integerValue":"1"}` and friends. Accepts what real clients send: numbers or
    /// strings for integers, `"NaN"`/`"Infinity"` doubles, `"NULL_VALUE"` or `0` for null.
    public init(json: JSON, depth: Int = 0) throws(FiregateError) {
        guard depth <= Value.maxParseDepth else {
            throw .invalidArgument("Value nested too deeply.")
        }
        guard case .object(let members) = json, members.count == 1, let (key, body) = members.elements.first else {
            throw .invalidArgument("Invalid value: expected an object with exactly one value field, got \(JSONWriter.string(json)).")
        }
        switch key {
        case "nullValue", "null_value":
            switch body {
            case .null, .string("NULL_VALUE"), .int(0): self = .null
            default: throw .invalidArgument("Invalid value for nullValue.")
            }
        case "booleanValue", "boolean_value":
            guard case .bool(let b) = body else { throw .invalidArgument("Invalid value for booleanValue: expected a boolean.") }
            self = .boolean(b)
        case "integerValue", "integer_value":
            switch body {
            case .int(let i): self = .integer(i)
            case .string(let s):
                guard let i = Int64(s) else { throw .invalidArgument("Invalid value for integerValue: \"\(s)\".") }
                self = .integer(i)
            case .double(let d) where d == d.rounded() && abs(d) < 9.2e18: self = .integer(Int64(d))
            default: throw .invalidArgument("Invalid value for integerValue.")
            }
        case "doubleValue", "double_value":
            switch body {
            case .int(let i): self = .double(Double(i))
            case .double(let d): self = .double(d)
            case .string(let s):
                switch s {
                case "NaN": self = .double(.nan)
                case "Infinity": self = .double(.infinity)
                case "-Infinity": self = .double(-.infinity)
                default:
                    guard let d = Double(s) else { throw .invalidArgument("Invalid value for doubleValue: \"\(s)\".") }
                    self = .double(d)
                }
            default: throw .invalidArgument("Invalid value for doubleValue.")
            }
        case "timestampValue", "timestamp_value":
            self = .timestamp(try Value.parseTimestamp(body))
        case "stringValue", "string_value":
            guard case .string(let s) = body else { throw .invalidArgument("Invalid value for stringValue: expected a string.") }
            self = .string(s)
        case "bytesValue", "bytes_value":
            guard case .string(let s) = body, let bytes = Base64.decode(s) else {
                throw .invalidArgument("Invalid value for bytesValue: expected base64.")
            }
            self = .bytes(bytes)
        case "referenceValue", "reference_value":
            guard case .string(let s) = body else { throw .invalidArgument("Invalid value for referenceValue: expected a string.") }
            self = .reference(s)
        case "geoPointValue", "geo_point_value":
            guard case .object = body else { throw .invalidArgument("Invalid value for geoPointValue.") }
            let lat = body.member("latitude")?.doubleValue ?? 0
            let lng = body.member("longitude")?.doubleValue ?? 0
            if let l = body.member("latitude"), l.doubleValue == nil { throw .invalidArgument("Invalid latitude.") }
            if let l = body.member("longitude"), l.doubleValue == nil { throw .invalidArgument("Invalid longitude.") }
            guard (-90...90).contains(lat), (-180...180).contains(lng) else {
                throw .invalidArgument("Invalid geo point: latitude must be in [-90, 90] and longitude in [-180, 180].")
            }
            self = .geoPoint(latitude: lat, longitude: lng)
        case "arrayValue", "array_value":
            guard case .object = body else { throw .invalidArgument("Invalid value for arrayValue.") }
            var values: [Value] = []
            if let list = body.member("values") {
                guard case .array(let items) = list else { throw .invalidArgument("Invalid arrayValue.values: expected a list.") }
                values.reserveCapacity(items.count)
                for item in items {
                    values.append(try Value(json: item, depth: depth + 1))
                }
            }
            self = .array(values)
        case "mapValue", "map_value":
            guard case .object = body else { throw .invalidArgument("Invalid value for mapValue.") }
            let fields = try Value.parseFields(body.member("fields"), depth: depth + 1)
            // BSON values are kept in their normal spelling (validation is the write's).
            self = .map(((try? BSONKind.normalizedForWrite(fields)) ?? nil) ?? fields)
        default:
            throw .invalidArgument("Invalid value: unknown value type \"\(key)\".")
        }
    }

    static let maxParseDepth = 100

    /// Parses a `fields` object (`{"name": Value, …}`); nil is an empty map.
    public static func parseFields(_ json: JSON?, depth: Int = 0) throws(FiregateError) -> [String: Value] {
        guard let json, json != .null else { return [:] }
        guard case .object(let members) = json else { throw .invalidArgument("Invalid fields: expected an object.") }
        var fields: [String: Value] = [:]
        fields.reserveCapacity(members.count)
        for (name, item) in members {
            fields[name] = try Value(json: item, depth: depth)
        }
        return fields
    }

    static func parseTimestamp(_ body: JSON) throws(FiregateError) -> Timestamp {
        switch body {
        case .string(let s):
            guard let t = Timestamp(rfc3339: s) else { throw .invalidArgument("Invalid value for timestampValue: \"\(s)\".") }
            return t.truncatedToMicroseconds
        case .object:
            let seconds: Int64
            switch body.member("seconds") {
            case .int(let i)?: seconds = i
            case .string(let s)?: seconds = Int64(s) ?? 0
            default: seconds = 0
            }
            let nanos = Int32(body.member("nanos")?.doubleValue ?? 0)
            guard seconds >= Timestamp.minSeconds, seconds <= Timestamp.maxSeconds, (0..<1_000_000_000).contains(nanos) else {
                throw .invalidArgument("Invalid value for timestampValue: out of range.")
            }
            return Timestamp(seconds: seconds, nanos: nanos).truncatedToMicroseconds
        default:
            throw .invalidArgument("Invalid value for timestampValue.")
        }
    }

    /// The proto3 JSON form of this value. A pending server timestamp renders as `null`
    /// unless the caller resolved it first.
    public var json: JSON {
        switch self {
        case .null: return ["nullValue": .null]
        case .boolean(let b): return ["booleanValue": .bool(b)]
        case .integer(let i): return ["integerValue": .string(String(i))]
        case .double(let d):
            if d.isNaN { return ["doubleValue": "NaN"] }
            if d.isInfinite { return ["doubleValue": .string(d < 0 ? "-Infinity" : "Infinity")] }
            // JSON numbers print -0 as 0; the string form keeps the sign (JS SDK number_serializer).
            if d == 0, d.sign == .minus { return ["doubleValue": "-0"] }
            return ["doubleValue": .double(d)]
        case .timestamp(let t): return ["timestampValue": .string(t.rfc3339)]
        case .string(let s): return ["stringValue": .string(s)]
        case .bytes(let b): return ["bytesValue": .string(Data(b).base64EncodedString())]
        case .reference(let r): return ["referenceValue": .string(r)]
        case .geoPoint(let lat, let lng): return ["geoPointValue": ["latitude": .double(lat), "longitude": .double(lng)]]
        case .array(let values): return ["arrayValue": values.isEmpty ? [:] : ["values": .array(values.map(\.json))]]
        case .map(let fields): return ["mapValue": fields.isEmpty ? [:] : ["fields": Value.fieldsJSON(fields)]]
        case .serverTimestamp: return ["nullValue": .null]
        }
    }

    /// A `fields` object with keys in a stable (sorted) order.
    public static func fieldsJSON(_ fields: [String: Value]) -> JSON {
        var members = OrderedDictionary<String, JSON>(minimumCapacity: fields.count)
        for key in fields.keys.sorted() { members[key] = fields[key]!.json }
        return .object(members)
    }
}

/// Standard and URL-safe base64, padded or not.
public enum Base64 {
    public static func decode(_ text: String) -> [UInt8]? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { [UInt8]($0) }
    }

    public static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
}
