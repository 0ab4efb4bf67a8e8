import FiregateModel
import Foundation
import SwiftProtobuf

/// `Value` ↔ google.firestore.v1.Value, one to one (the model was made from the proto). Values
/// only pipelines use (field references, functions, pipelines) are INVALID_ARGUMENT here, as
/// they are in a document.
extension Value {
    public init(proto: Google_Firestore_V1_Value, depth: Int = 0) throws(FiregateError) {
        guard depth <= Value.maxProtoDepth else { throw .invalidArgument("Value nested too deeply.") }
        switch proto.valueType {
        case nil, .nullValue?: self = .null
        case .booleanValue(let b)?: self = .boolean(b)
        case .integerValue(let i)?: self = .integer(i)
        case .doubleValue(let d)?: self = .double(d)
        case .timestampValue(let t)?:
            guard t.seconds >= Timestamp.minSeconds, t.seconds <= Timestamp.maxSeconds, (0..<1_000_000_000).contains(t.nanos) else {
                throw .invalidArgument("Invalid value for timestampValue: out of range.")
            }
            self = .timestamp(Timestamp(proto: t).truncatedToMicroseconds)
        case .stringValue(let s)?: self = .string(s)
        case .bytesValue(let data)?: self = .bytes([UInt8](data))
        case .referenceValue(let name)?: self = .reference(name)
        case .geoPointValue(let point)?:
            guard (-90...90).contains(point.latitude), (-180...180).contains(point.longitude) else {
                throw .invalidArgument("Invalid geo point: latitude must be in [-90, 90] and longitude in [-180, 180].")
            }
            self = .geoPoint(latitude: point.latitude, longitude: point.longitude)
        case .arrayValue(let array)?:
            var values: [Value] = []
            values.reserveCapacity(array.values.count)
            for item in array.values { values.append(try Value(proto: item, depth: depth + 1)) }
            self = .array(values)
        case .mapValue(let map)?:
            self = .map(try Value.fields(proto: map.fields, depth: depth + 1))
        default:
            throw .invalidArgument("Invalid value: pipeline expressions cannot be stored or queried as values.")
        }
    }

    /// Same depth limit as the JSON parser's.
    static let maxProtoDepth = 100

    public static func fields(proto: [String: Google_Firestore_V1_Value], depth: Int = 0) throws(FiregateError) -> [String: Value] {
        var fields: [String: Value] = [:]
        fields.reserveCapacity(proto.count)
        for (name, item) in proto { fields[name] = try Value(proto: item, depth: depth) }
        return fields
    }

    /// The proto form. A pending server timestamp (edge-only) has none and renders as null.
    public var proto: Google_Firestore_V1_Value {
        var out = Google_Firestore_V1_Value()
        switch self {
        case .null, .serverTimestamp: out.nullValue = .nullValue
        case .boolean(let b): out.booleanValue = b
        case .integer(let i): out.integerValue = i
        case .double(let d): out.doubleValue = d
        case .timestamp(let t): out.timestampValue = t.proto
        case .string(let s): out.stringValue = s
        case .bytes(let b): out.bytesValue = Data(b)
        case .reference(let name): out.referenceValue = name
        case .geoPoint(let latitude, let longitude):
            var point = Google_Type_LatLng()
            point.latitude = latitude
            point.longitude = longitude
            out.geoPointValue = point
        case .array(let values):
            var array = Google_Firestore_V1_ArrayValue()
            array.values = values.map(\.proto)
            out.arrayValue = array
        case .map(let fields):
            var map = Google_Firestore_V1_MapValue()
            map.fields = Value.proto(fields: fields)
            out.mapValue = map
        }
        return out
    }

    public static func proto(fields: [String: Value]) -> [String: Google_Firestore_V1_Value] {
        var out: [String: Google_Firestore_V1_Value] = [:]
        out.reserveCapacity(fields.count)
        for (name, value) in fields { out[name] = value.proto }
        return out
    }
}

extension Timestamp {
    public init(proto: Google_Protobuf_Timestamp) {
        self.init(seconds: proto.seconds, nanos: proto.nanos)
    }

    public var proto: Google_Protobuf_Timestamp {
        Google_Protobuf_Timestamp(seconds: seconds, nanos: nanos)
    }
}

extension Document {
    /// The proto form, projected to `mask` when given (as the JSON form is).
    public func proto(database: DatabaseID, mask: [FieldPath]? = nil) -> Google_Firestore_V1_Document {
        var out = Google_Firestore_V1_Document()
        out.name = database.resourceName(path)
        out.fields = Value.proto(fields: mask.map { Document.project(fields, to: $0) } ?? fields)
        out.createTime = createTime.proto
        out.updateTime = updateTime.proto
        return out
    }
}
