import FiregateModel
import Foundation

/// Values as the Firebase Rules API and the Emulator UI show them (docs/wire/security-rules.md,
/// Types and values): `{"stringValue": "x"}`, `{"mapValue": {"fields": …}}`, `{"pathValue": {"segments": …}}`.
/// Traces, coverage and the dry run all speak this shape.
extension RulesValue {
    public var expressionValue: JSON {
        switch self {
        case .null: ["nullValue": "NULL_VALUE"]
        case .bool(let b): ["boolValue": .bool(b)]
        case .int(let i): ["intValue": .string(String(i))]
        case .float(let f): ["floatValue": .double(f)]
        case .string(let s): ["stringValue": .string(s)]
        case .bytes(let b): ["bytesValue": .string(Data(b).base64EncodedString())]
        case .path(let segments): ["pathValue": ["segments": .array(segments.map(JSON.string))]]
        case .list(let items): ["listValue": ["values": .array(items.map(\.expressionValue))]]
        case .set(let items): ["setValue": ["values": .array(items.map(\.expressionValue))]]
        case .map(let fields): ["mapValue": ["fields": RulesValue.object(fields.keys.sorted().map { ($0, fields[$0]!.expressionValue) })]]
        case .timestamp(let seconds, let nanos):
            ["timestampValue": .string(Timestamp(seconds: seconds, nanos: nanos).rfc3339)]
        case .duration(let seconds, let nanos):
            ["durationValue": .string(nanos == 0 ? "\(seconds)s" : String(format: "%.9fs", Double(seconds) + Double(nanos) / 1e9))]
        case .latlng(let latitude, let longitude): ["latlngValue": ["latitude": .double(latitude), "longitude": .double(longitude)]]
        case .mapDiff(let added, let removed, let changed, let unchanged):
            ["mapDiffValue": ["keyStatuses": RulesValue.object(
                added.map { ($0, JSON.string("ADDED")) } + removed.map { ($0, "REMOVED") }
                    + changed.map { ($0, "CHANGED") } + unchanged.map { ($0, "UNCHANGED") })]]
        case .bound(let lower, let lowerInclusive, let upper, let upperInclusive):
            ["constraintValue": ["simpleConstraints": .array(
                (lower.map { [["comparator": lowerInclusive ? "GTE" : "GT", "value": $0.expressionValue] as JSON] } ?? [])
                    + (upper.map { [["comparator": upperInclusive ? "LTE" : "LT", "value": $0.expressionValue] as JSON] } ?? []))]]
        }
    }

    static func object(_ pairs: [(String, JSON)]) -> JSON {
        pairs.reduce(JSON.object([:])) { $0.withMember($1.0, $1.1) }
    }

    /// The short form a trace line shows (`debug()`'s text).
    public var traceText: String { RulesLibrary.debugText(self) }
}
