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

    /// Position in Firestore's cross-type order (JS SDK type_order.ts, with the BSON types of
    /// Enterprise databases: MinKey right after null, MaxKey after everything).
    public var typeOrder: Int {
        switch self {
        case .null: 0
        case .boolean: 2
        case .integer, .double: 3
        case .timestamp: 4
        case .serverTimestamp: 6
        case .string: 7
        case .bytes: 8
        case .reference: 10
        case .geoPoint: 12
        case .array: 14
        case .map(let fields):
            switch BSONKind(fields) {
            case .minKey?: 1
            case .int32?, .decimal128?: 3
            case .timestamp?: 5
            case .binary?: 9
            case .objectID?: 11
            case .regex?: 13
            case .maxKey?: 17
            case nil: Value.isVector(fields) ? 15 : 16
            }
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

    /// Null or NaN: operands the backend's filters match nothing with.
    public var isNullOrNaN: Bool { self == .null || isNaN }

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

extension Value {
    /// Identity of stored values (no-op writes, snapshot diffs): doubles compare by bits with every
    /// NaN equal, so a document holding NaN equals itself and -0 differs from 0; strings by bytes.
    /// Query equality, where 3 == 3.0, is `Value.equals`.
    public static func == (a: Value, b: Value) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.boolean(let x), .boolean(let y)): x == y
        case (.integer(let x), .integer(let y)): x == y
        case (.double(let x), .double(let y)): sameDouble(x, y)
        case (.timestamp(let x), .timestamp(let y)): x == y
        case (.string(let x), .string(let y)): x.utf8.elementsEqual(y.utf8)
        case (.bytes(let x), .bytes(let y)): x == y
        case (.reference(let x), .reference(let y)): x.utf8.elementsEqual(y.utf8)
        case (.geoPoint(let xa, let xo), .geoPoint(let ya, let yo)): sameDouble(xa, ya) && sameDouble(xo, yo)
        case (.array(let x), .array(let y)): x == y
        case (.map(let x), .map(let y)): x == y
        case (.serverTimestamp(let xt, let xp), .serverTimestamp(let yt, let yp)): xt == yt && xp == yp
        default: false
        }
    }

    static func sameDouble(_ x: Double, _ y: Double) -> Bool {
        x.bitPattern == y.bitPattern || (x.isNaN && y.isNaN)
    }
}
