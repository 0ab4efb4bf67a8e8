/// A Firestore field value (google.firestore.v1.Value).
///
/// `serverTimestamp` exists only in edge clients' local views: a REQUEST_TIME transform not yet
/// acknowledged, carrying the local write time and the value it replaced.
public indirect enum Value: Sendable, Equatable {
    case null
    case boolean(Bool)
    case integer(Int64)
    case double(Double)
    case timestamp(Timestamp)
    case string(String)
    case bytes([UInt8])
    case reference(String)
    case geoPoint(latitude: Double, longitude: Double)
    case array([Value])
    case map([String: Value])
    case serverTimestamp(localWriteTime: Timestamp, previous: Value?)

    /// Position in Firestore's cross-type order (JS SDK type_order.ts).
    public var typeOrder: Int {
        switch self {
        case .null: 0
        case .boolean: 1
        case .integer, .double: 2
        case .timestamp: 3
        case .serverTimestamp: 4
        case .string: 5
        case .bytes: 6
        case .reference: 7
        case .geoPoint: 8
        case .array: 9
        case .map(let fields): Value.isVector(fields) ? 10 : 11
        }
    }

    static func isVector(_ fields: [String: Value]) -> Bool {
        if case .string("__vector__")? = fields["__type__"] { return true }
        return false
    }

    public var isNaN: Bool {
        if case .double(let d) = self { return d.isNaN }
        return false
    }

    public var isNumber: Bool {
        switch self {
        case .integer, .double: true
        default: false
        }
    }

    public var arrayElements: [Value]? {
        if case .array(let values) = self { return values }
        return nil
    }

    public var mapFields: [String: Value]? {
        if case .map(let fields) = self { return fields }
        return nil
    }
}
