import FiregateModel

/// A Firestore document as an export's entity, both ways (docs/export-format.md): the key is the
/// document's path as (collection, id) pairs under `dev~<project>`; each field a property —
/// timestamps as microseconds (meaning 7), bytes as a blob (14), geo points as points (9), maps as
/// a nested entity (19), arrays as one property per element marked `multiple`, an empty array as
/// one property of meaning 24, a vector as its doubles each marked `multiple` with meaning 31.
enum DocumentEntity {
    static func entity(of document: Document, database: DatabaseID) -> Entity {
        Entity(key: key(project: database.project, database: database.database, path: document.path.segments),
               properties: properties(of: document.fields))
    }

    /// The document an entity holds, in the database its key names (the project is the
    /// importer's, as the emulator imports into the running project).
    static func document(of entity: Entity, project: String, at time: Timestamp, context: String) throws(FiregateError) -> (DatabaseID, Document) {
        guard !entity.key.path.isEmpty else { throw .invalidArgument("\(context): an entity with an empty key.") }
        let segments = entity.key.path.flatMap { [$0.kind, $0.name] }
        let fields = try self.fields(of: entity.properties, context: context)
        let database = DatabaseID(project: project, database: entity.key.databaseID ?? "(default)")
        return (database, Document(path: ResourcePath(segments), fields: fields, createTime: time, updateTime: time))
    }

    private static func key(project: String, database: String, path segments: [String]) -> Entity.Key {
        var path: [Entity.Element] = []
        var i = 0
        while i + 1 < segments.count {
            path.append(Entity.Element(kind: segments[i], name: segments[i + 1]))
            i += 2
        }
        return Entity.Key(app: "dev~\(project)", databaseID: database == "(default)" ? nil : database, path: path)
    }

    private static func properties(of fields: [String: Value]) -> [Entity.Property] {
        var out: [Entity.Property] = []
        for name in fields.keys.sorted() {
            guard let value = fields[name] else { continue }
            if let vector = vectorElements(value) {
                for element in vector {
                    out.append(Entity.Property(name: name, meaning: Entity.Meaning.vector, multiple: true, value: .double(element)))
                }
            } else if case .array(let items) = value {
                if items.isEmpty {
                    out.append(Entity.Property(name: name, meaning: Entity.Meaning.emptyList, value: .none, raw: false))
                }
                for item in items {
                    var property = self.property(name, item)
                    property.multiple = true
                    out.append(property)
                }
            } else {
                out.append(property(name, value))
            }
        }
        return out
    }

    /// A vector value (`{"__type__": "__vector__", "value": [doubles…]}`, not empty): its doubles.
    private static func vectorElements(_ value: Value) -> [Double]? {
        guard case .map(let fields) = value, fields.count == 2, fields["__type__"] == .string("__vector__"),
              case .array(let items)? = fields["value"], !items.isEmpty else { return nil }
        var doubles: [Double] = []
        for item in items {
            guard case .double(let d) = item else { return nil }
            doubles.append(d)
        }
        return doubles
    }

    private static func property(_ name: String, _ value: Value) -> Entity.Property {
        switch value {
        case .null, .array: return Entity.Property(name: name, value: .none)
        case .boolean(let b): return Entity.Property(name: name, value: .boolean(b))
        case .integer(let n): return Entity.Property(name: name, value: .integer(n))
        case .double(let d): return Entity.Property(name: name, value: .double(d))
        case .string(let s): return Entity.Property(name: name, value: .bytes(Array(s.utf8)))
        case .bytes(let bytes): return Entity.Property(name: name, meaning: Entity.Meaning.blob, value: .bytes(bytes))
        case .timestamp(let t), .serverTimestamp(let t, _):
            return Entity.Property(name: name, meaning: Entity.Meaning.timestamp, value: .integer(t.microseconds))
        case .geoPoint(let latitude, let longitude):
            return Entity.Property(name: name, meaning: Entity.Meaning.point, value: .point(x: latitude, y: longitude))
        case .reference(let reference):
            return Entity.Property(name: name, value: .reference(referenceKey(reference)))
        case .map(let fields):
            let nested = Entity(key: Entity.Key(app: "", path: []), properties: properties(of: fields), hasEntityGroup: false)
            return Entity.Property(name: name, meaning: Entity.Meaning.entity, value: .bytes(nested.encoded()))
        }
    }

    /// `projects/P/databases/D/documents/a/b` as a reference key.
    private static func referenceKey(_ name: String) -> Entity.Key {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 5, parts[0] == "projects", parts[2] == "databases", parts[4] == "documents" else {
            return Entity.Key(app: "", path: [])
        }
        return key(project: parts[1], database: parts[3], path: Array(parts[5...]))
    }

    /// Properties of one name stand together (an array's elements are adjacent); a name met
    /// again further on still adds to its array.
    private static func fields(of properties: [Entity.Property], context: String) throws(FiregateError) -> [String: Value] {
        var fields: [String: Value] = [:]
        fields.reserveCapacity(properties.count)
        var start = properties.startIndex
        while start < properties.endIndex {
            let name = properties[start].name
            var end = start + 1
            while end < properties.endIndex, properties[end].name == name { end += 1 }
            let value = try self.value(ofGroup: properties[start..<end], context: context)
            if case .array(let more) = value, case .array(let earlier)? = fields[name] {
                fields[name] = .array(earlier + more)
            } else {
                fields[name] = value
            }
            start = end
        }
        return fields
    }

    private static func value(ofGroup group: ArraySlice<Entity.Property>, context: String) throws(FiregateError) -> Value {
        let first = group[group.startIndex]
        if group.count == 1, first.meaning == Entity.Meaning.emptyList, !first.multiple { return .array([]) }
        if group.allSatisfy({ $0.meaning == Entity.Meaning.vector }) {
            var doubles: [Value] = []
            for property in group {
                guard case .double(let d) = property.value else {
                    throw .invalidArgument("\(context): field \(first.name) is a vector with an element that is not a double.")
                }
                doubles.append(.double(d))
            }
            return .map(["__type__": .string("__vector__"), "value": .array(doubles)])
        }
        if group.count > 1 || first.multiple {
            var items: [Value] = []
            items.reserveCapacity(group.count)
            for property in group where property.meaning != Entity.Meaning.emptyList {
                items.append(try value(of: property, context: context))
            }
            return .array(items)
        }
        return try value(of: first, context: context)
    }

    private static func value(of property: Entity.Property, context: String) throws(FiregateError) -> Value {
        let name = property.name
        switch (property.meaning, property.value) {
        case (_, .none): return .null
        case (Entity.Meaning.entity, .bytes(let bytes)):
            let nested = try Entity.decode(bytes[...], context: "\(context), map \(name)")
            return .map(try fields(of: nested.properties, context: context))
        case (Entity.Meaning.timestamp, .integer(let micros)): return .timestamp(Timestamp(microseconds: micros))
        case (Entity.Meaning.blob, .bytes(let bytes)), (Entity.Meaning.byteString, .bytes(let bytes)): return .bytes(bytes)
        case (_, .bytes(let bytes)):
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw .invalidArgument("\(context): field \(name) holds text that is not UTF-8.")
            }
            return .string(text)
        case (_, .integer(let n)): return .integer(n)
        case (_, .boolean(let b)): return .boolean(b)
        case (_, .double(let d)): return .double(d)
        case (_, .point(let x, let y)): return .geoPoint(latitude: x, longitude: y)
        case (_, .reference(let key)):
            let project = key.app.split(separator: "~", maxSplits: 1).last.map(String.init) ?? key.app
            let database = key.databaseID ?? "(default)"
            let path = key.path.flatMap { [$0.kind, $0.name] }.joined(separator: "/")
            return .reference("projects/\(project)/databases/\(database)/documents/\(path)")
        }
    }
}
