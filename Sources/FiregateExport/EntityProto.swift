import FiregateModel

/// The Datastore entity (`storage_onestore_v3.EntityProto`) an export stores each Firestore
/// document as, with only the fields exports use (docs/export-format.md).
struct Entity: Equatable {
    /// One element of a key path: a collection id and a document id (exports always use names;
    /// a numeric id is read as its decimal text).
    struct Element: Equatable {
        var kind: String
        var name: String
    }

    struct Key: Equatable {
        var app: String
        var namespace: String?
        var databaseID: String?
        var path: [Element]
    }

    enum PropertyValue: Equatable {
        case none
        case integer(Int64)
        case boolean(Bool)
        case bytes([UInt8])
        case double(Double)
        case point(x: Double, y: Double)
        case reference(Key)

        static func == (a: PropertyValue, b: PropertyValue) -> Bool {
            switch (a, b) {
            case (.none, .none): true
            case let (.integer(x), .integer(y)): x == y
            case let (.boolean(x), .boolean(y)): x == y
            case let (.bytes(x), .bytes(y)): x == y
            case let (.double(x), .double(y)): x.bitPattern == y.bitPattern
            case let (.point(x1, y1), .point(x2, y2)): x1.bitPattern == x2.bitPattern && y1.bitPattern == y2.bitPattern
            case let (.reference(x), .reference(y)): x == y
            default: false
            }
        }
    }

    /// `Property.meaning` values exports use.
    enum Meaning {
        static let none = 0, timestamp = 7, point = 9, blob = 14, text = 15, byteString = 16, entity = 19, emptyList = 24, vector = 31
    }

    struct Property: Equatable {
        var name: String
        var meaning: Int = Meaning.none
        var multiple: Bool = false
        var value: PropertyValue
        /// In `raw_property` (15), where exports put all but empty lists, or in `property` (14).
        var raw: Bool = true
    }

    var key: Key
    var properties: [Property]
    /// Field 16: the first element of the key (empty for the entity inside a map).
    var hasEntityGroup: Bool = true

    // MARK: writing

    func encoded() -> [UInt8] {
        var out = ProtoWriter()
        out.message(13) { Entity.write(key, into: &$0) }
        for property in properties {
            out.message(property.raw ? 15 : 14) { Entity.write(property, into: &$0) }
        }
        out.message(16) { group in
            if hasEntityGroup, let first = key.path.first { Entity.write(path: [first], into: &group) }
        }
        return out.bytes
    }

    private static func write(_ key: Key, into out: inout ProtoWriter) {
        out.string(13, key.app)
        out.message(14) { write(path: key.path, into: &$0) }
        if let namespace = key.namespace { out.string(20, namespace) }
        if let database = key.databaseID { out.string(23, database) }
    }

    private static func write(path: [Element], into out: inout ProtoWriter) {
        for element in path {
            out.group(1) { group in
                group.string(2, element.kind)
                group.string(4, element.name)
            }
        }
    }

    private static func write(_ property: Property, into out: inout ProtoWriter) {
        if property.meaning != Meaning.none { out.int(1, Int64(property.meaning)) }
        out.string(3, property.name)
        out.bool(4, property.multiple)
        out.message(5) { value in
            switch property.value {
            case .none: break
            case .integer(let n): value.int(1, n)
            case .boolean(let b): value.bool(2, b)
            case .bytes(let bytes): value.data(3, bytes)
            case .double(let d): value.double(4, d)
            case .point(let x, let y):
                value.group(5) { point in
                    point.double(6, x)
                    point.double(7, y)
                }
            case .reference(let key):
                value.group(12) { reference in
                    reference.string(13, key.app)
                    for element in key.path {
                        reference.group(14) { item in
                            item.string(15, element.kind)
                            item.string(17, element.name)
                        }
                    }
                    if let namespace = key.namespace { reference.string(20, namespace) }
                    if let database = key.databaseID { reference.string(23, database) }
                }
            }
        }
    }

    // MARK: reading

    /// Reads an entity; `context` names the file and record in errors.
    static func decode(_ bytes: ArraySlice<UInt8>, context: String) throws(FiregateError) -> Entity {
        var reader = ProtoReader(bytes, context: context)
        var key: Key?
        var properties: [Property] = []
        var hasEntityGroup = false
        while let (field, value) = try reader.next() {
            switch (field, value) {
            case (13, .bytes(let inner)): key = try decodeKey(inner, context: context)
            case (14, .bytes(let inner)), (15, .bytes(let inner)):
                var property = try decodeProperty(inner, context: context)
                property.raw = field == 15
                properties.append(property)
            case (16, .bytes(let inner)): hasEntityGroup = !inner.isEmpty
            case (4, _), (5, _), (17, _): continue   // kind, kind_uri, owner: not used by exports
            default: throw reader.failure("unknown field \(field) in an entity")
            }
        }
        guard let key else { throw reader.failure("an entity without a key") }
        return Entity(key: key, properties: properties, hasEntityGroup: hasEntityGroup)
    }

    private static func decodeKey(_ bytes: ArraySlice<UInt8>, context: String) throws(FiregateError) -> Key {
        var reader = ProtoReader(bytes, context: context)
        var key = Key(app: "", path: [])
        while let (field, value) = try reader.next() {
            switch (field, value) {
            case (13, _): key.app = try value.string(reader, "a key's app")
            case (20, _): key.namespace = try value.string(reader, "a key's namespace")
            case (23, _): key.databaseID = try value.string(reader, "a key's database")
            case (14, .bytes(let path)): key.path = try decodePath(path, context: context)
            default: throw reader.failure("unknown field \(field) in a key")
            }
        }
        return key
    }

    private static func decodePath(_ bytes: ArraySlice<UInt8>, context: String) throws(FiregateError) -> [Element] {
        var reader = ProtoReader(bytes, context: context)
        var path: [Element] = []
        while let (field, value) = try reader.next() {
            guard field == 1, case .group(let group) = value else { throw reader.failure("unknown field \(field) in a key path") }
            path.append(try decodeElement(group, context: context, kindField: 2, idField: 3, nameField: 4))
        }
        return path
    }

    private static func decodeElement(_ bytes: ArraySlice<UInt8>, context: String,
                                      kindField: Int, idField: Int, nameField: Int) throws(FiregateError) -> Element {
        var reader = ProtoReader(bytes, context: context)
        var kind: String?, name: String?
        while let (field, value) = try reader.next() {
            switch field {
            case kindField: kind = try value.string(reader, "a path element's kind")
            case nameField: name = try value.string(reader, "a path element's name")
            case idField: name = String(try value.integer(reader, "a path element's id"))
            default: throw reader.failure("unknown field \(field) in a path element")
            }
        }
        guard let kind, let name else { throw reader.failure("a path element without a kind and a name") }
        return Element(kind: kind, name: name)
    }

    private static func decodeProperty(_ bytes: ArraySlice<UInt8>, context: String) throws(FiregateError) -> Property {
        var reader = ProtoReader(bytes, context: context)
        var name: String?
        var property = Property(name: "", value: .none)
        while let (field, value) = try reader.next() {
            switch (field, value) {
            case (1, _): property.meaning = Int(try value.integer(reader, "a property's meaning"))
            case (2, _), (6, _), (7, _): continue   // meaning_uri, stashed, computed
            case (3, _): name = try value.string(reader, "a property's name")
            case (4, _): property.multiple = try value.integer(reader, "a property's multiple") != 0
            case (5, .bytes(let inner)): property.value = try decodeValue(inner, context: context)
            default: throw reader.failure("unknown field \(field) in a property")
            }
        }
        guard let name else { throw reader.failure("a property without a name") }
        property.name = name
        return property
    }

    private static func decodeValue(_ bytes: ArraySlice<UInt8>, context: String) throws(FiregateError) -> PropertyValue {
        var reader = ProtoReader(bytes, context: context)
        var result = PropertyValue.none
        while let (field, value) = try reader.next() {
            switch (field, value) {
            case (1, _): result = .integer(try value.integer(reader, "an integer"))
            case (2, _): result = .boolean(try value.integer(reader, "a boolean") != 0)
            case (3, .bytes(let bytes)): result = .bytes(Array(bytes))
            case (4, .fixed64(let bits)): result = .double(Double(bitPattern: bits))
            case (5, .group(let group)):
                var point = ProtoReader(group, context: context)
                var x = 0.0, y = 0.0
                while let (inner, coordinate) = try point.next() {
                    guard case .fixed64(let bits) = coordinate, inner == 6 || inner == 7 else { throw point.failure("unknown field \(inner) in a point") }
                    if inner == 6 { x = Double(bitPattern: bits) } else { y = Double(bitPattern: bits) }
                }
                result = .point(x: x, y: y)
            case (12, .group(let group)): result = .reference(try decodeReference(group, context: context))
            case (8, _): throw reader.failure("a user value (Datastore's, not Firestore's)")
            default: throw reader.failure("unknown field \(field) in a property value")
            }
        }
        return result
    }

    private static func decodeReference(_ bytes: ArraySlice<UInt8>, context: String) throws(FiregateError) -> Key {
        var reader = ProtoReader(bytes, context: context)
        var key = Key(app: "", path: [])
        while let (field, value) = try reader.next() {
            switch (field, value) {
            case (13, _): key.app = try value.string(reader, "a reference's app")
            case (20, _): key.namespace = try value.string(reader, "a reference's namespace")
            case (23, _): key.databaseID = try value.string(reader, "a reference's database")
            case (14, .group(let group)): key.path.append(try decodeElement(group, context: context, kindField: 15, idField: 16, nameField: 17))
            default: throw reader.failure("unknown field \(field) in a reference")
            }
        }
        return key
    }
}
