import OrderedCollections

/// A stored Firestore document: its path, fields and the times the server gave it.
public struct Document: Sendable, Equatable {
    public var path: ResourcePath
    public var fields: [String: Value]
    public var createTime: Timestamp
    public var updateTime: Timestamp

    public init(path: ResourcePath, fields: [String: Value], createTime: Timestamp, updateTime: Timestamp) {
        self.path = path
        self.fields = fields
        self.createTime = createTime
        self.updateTime = updateTime
    }

    /// The value at `field`, or nil when absent. `__name__` is the document's reference.
    public func value(at field: FieldPath, database: DatabaseID) -> Value? {
        if field.isDocumentID { return .reference(database.resourceName(path)) }
        return Document.value(in: fields, at: field.segments[...])
    }

    public static func value(in fields: [String: Value], at segments: ArraySlice<String>) -> Value? {
        guard let first = segments.first, let value = fields[first] else { return nil }
        if segments.count == 1 { return value }
        guard case .map(let inner) = value else { return nil }
        return Document.value(in: inner, at: segments.dropFirst())
    }

    /// Sets (or with nil, deletes) the value at a path, creating maps along the way and
    /// replacing non-map values that stand in the way.
    public static func set(_ value: Value?, in fields: inout [String: Value], at segments: ArraySlice<String>) {
        guard let first = segments.first else { return }
        if segments.count == 1 {
            fields[first] = value
            return
        }
        var inner: [String: Value]
        if case .map(let existing)? = fields[first] {
            inner = existing
        } else {
            if value == nil { return }
            inner = [:]
        }
        Document.set(value, in: &inner, at: segments.dropFirst())
        fields[first] = .map(inner)
    }

    /// The JSON form `{"name","fields","createTime","updateTime"}`, optionally projected.
    public func json(database: DatabaseID, mask: [FieldPath]? = nil) -> JSON {
        var members = OrderedDictionary<String, JSON>(minimumCapacity: 4)
        members["name"] = .string(database.resourceName(path))
        let shown = mask.map { Document.project(fields, to: $0) } ?? fields
        if !shown.isEmpty { members["fields"] = Value.fieldsJSON(shown) }
        members["createTime"] = .string(createTime.rfc3339)
        members["updateTime"] = .string(updateTime.rfc3339)
        return .object(members)
    }

    /// Only the fields named by `mask` (a projection; absent paths are skipped).
    public static func project(_ fields: [String: Value], to mask: [FieldPath]) -> [String: Value] {
        var result: [String: Value] = [:]
        for path in mask where !path.isDocumentID {
            if let value = value(in: fields, at: path.segments[...]) {
                set(value, in: &result, at: path.segments[...])
            }
        }
        return result
    }
}
