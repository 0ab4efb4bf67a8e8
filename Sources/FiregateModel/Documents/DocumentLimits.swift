/// Production's size and shape limits for documents (firebase.google.com/docs/firestore/quotas).
public enum DocumentLimits {
    public static let maxDocumentBytes = 1_048_576
    public static let maxMapDepth = 20
    public static let maxWritesPerCommit = 500

    /// Storage size of a document name: each segment's UTF-8 length + 1, plus 16.
    public static func nameSize(_ path: ResourcePath) -> Int {
        path.segments.reduce(16) { $0 + $1.utf8.count + 1 }
    }

    /// Storage size of a value, per Firestore's storage size calculation.
    public static func size(of value: Value) -> Int {
        switch value {
        case .null, .boolean: 1
        case .integer, .double, .timestamp, .serverTimestamp: 8
        case .string(let s): s.utf8.count + 1
        case .bytes(let b): b.count
        case .reference(let r): r.split(separator: "/").dropFirst(5).reduce(16) { $0 + $1.utf8.count + 1 }
        case .geoPoint: 16
        case .array(let values): values.reduce(0) { $0 + size(of: $1) }
        case .map(let fields): size(of: fields)
        }
    }

    public static func size(of fields: [String: Value]) -> Int {
        fields.reduce(0) { $0 + $1.key.utf8.count + 1 + size(of: $1.value) }
    }

    public static func documentSize(path: ResourcePath, fields: [String: Value]) -> Int {
        nameSize(path) + size(of: fields) + 32
    }

    /// Checks size and nesting; INVALID_ARGUMENT with production's wording when over.
    public static func validate(path: ResourcePath, fields: [String: Value], database: DatabaseID) throws(FiregateError) {
        let size = documentSize(path: path, fields: fields)
        if size > maxDocumentBytes {
            throw .invalidArgument("Document '\(database.resourceName(path))' cannot be written because its size (\(size) bytes) exceeds the maximum allowed size of 1,048,576 bytes.")
        }
        for (name, value) in fields {
            try validateDepth(value, depth: 1, field: name)
            if name.isEmpty { throw .invalidArgument("Field names must not be empty.") }
        }
    }

    static func validateDepth(_ value: Value, depth: Int, field: String) throws(FiregateError) {
        switch value {
        case .map(let inner):
            if depth > maxMapDepth {
                throw .invalidArgument("Property \(field) contains a map nested more than \(maxMapDepth) levels deep.")
            }
            for (_, v) in inner { try validateDepth(v, depth: depth + 1, field: field) }
        case .array(let values):
            if depth > maxMapDepth {
                throw .invalidArgument("Property \(field) contains an array nested more than \(maxMapDepth) levels deep.")
            }
            for v in values { try validateDepth(v, depth: depth + 1, field: field) }
        default:
            break
        }
    }
}
