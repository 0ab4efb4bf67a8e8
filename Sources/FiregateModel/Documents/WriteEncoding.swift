/// Firestore JSON for writes (the inverse of `Write(json:database:)`), used to persist queued
/// edge mutations and to send them to the backend unchanged.
extension Write {
    public func json(database: DatabaseID) -> JSON {
        let name = JSON.string(database.resourceName(path))
        var result: JSON
        switch operation {
        case .update(let fields, let mask):
            result = ["update": ["name": name, "fields": Value.fieldsJSON(fields)]]
            if let mask { result = result.withMember("updateMask", ["fieldPaths": .array(mask.map { .string($0.canonical) })]) }
            if !transforms.isEmpty { result = result.withMember("updateTransforms", .array(transforms.map(\.json))) }
        case .delete:
            result = ["delete": name]
        case .transform:
            result = ["transform": ["document": name, "fieldTransforms": .array(transforms.map(\.json))]]
        case .verify:
            result = ["verify": name]
        }
        if !precondition.isEmpty {
            var pre: JSON = [:]
            if let exists = precondition.exists { pre = pre.withMember("exists", .bool(exists)) }
            if let time = precondition.updateTime { pre = pre.withMember("updateTime", .string(time.rfc3339)) }
            result = result.withMember("currentDocument", pre)
        }
        return result
    }
}

extension FieldTransform {
    public var json: JSON {
        let path = JSON.string(field.canonical)
        switch operation {
        case .requestTime: return ["fieldPath": path, "setToServerValue": "REQUEST_TIME"]
        case .increment(let v): return ["fieldPath": path, "increment": v.json]
        case .maximum(let v): return ["fieldPath": path, "maximum": v.json]
        case .minimum(let v): return ["fieldPath": path, "minimum": v.json]
        case .appendMissingElements(let vs): return ["fieldPath": path, "appendMissingElements": ["values": .array(vs.map(\.json))]]
        case .removeAllFromArray(let vs): return ["fieldPath": path, "removeAllFromArray": ["values": .array(vs.map(\.json))]]
        }
    }
}

extension JSON {
    /// A copy of this object with `key` set (appended when new); other values are unchanged.
    public func withMember(_ key: String, _ value: JSON) -> JSON {
        guard case .object(var members) = self else { return self }
        members[key] = value
        return .object(members)
    }

    /// A copy of this object without `key`.
    public func withoutMember(_ key: String) -> JSON {
        guard case .object(var members) = self else { return self }
        members.removeValue(forKey: key)
        return .object(members)
    }
}

/// How pending server timestamps read back in a local view (the SDK's `serverTimestamps` option).
public enum ServerTimestampBehavior: String, Sendable {
    /// null (the SDK default)
    case none
    /// the local write time
    case estimate
    /// the value the field had before the write
    case previous

    /// Replaces pending server timestamps by what this behaviour shows.
    public func resolve(_ value: Value) -> Value {
        switch value {
        case .serverTimestamp(let local, let previous):
            switch self {
            case .none: return .null
            case .estimate: return .timestamp(local)
            case .previous: return previous.map(resolve) ?? .null
            }
        case .map(let fields): return .map(fields.mapValues(resolve))
        case .array(let values): return .array(values.map(resolve))
        default: return value
        }
    }

    public func resolve(_ fields: [String: Value]) -> [String: Value] { fields.mapValues(resolve) }
}
