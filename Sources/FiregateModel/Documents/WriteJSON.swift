/// Parsing of `Write` JSON (google.firestore.v1.Write) against one database.
extension Write {
    public init(json: JSON, database: DatabaseID) throws(FiregateError) {
        guard case .object = json else { throw .invalidArgument("A write must be an object.") }
        let update = json.member("update").flatMap { $0 == .null ? nil : $0 }
        let delete = json.member("delete").flatMap { $0 == .null ? nil : $0 }
        let transform = json.member("transform").flatMap { $0 == .null ? nil : $0 }
        let verify = json.member("verify").flatMap { $0 == .null ? nil : $0 }
        let count = [update, delete, transform, verify].compactMap { $0 }.count
        guard count == 1 else {
            throw .invalidArgument("A write must have exactly one of update, delete, transform or verify.")
        }
        var transforms: [FieldTransform] = []
        if let list = json.member("updateTransforms"), list != .null {
            guard update != nil else { throw .invalidArgument("updateTransforms are only allowed with an update.") }
            guard let items = list.arrayValue else { throw .invalidArgument("updateTransforms must be a list.") }
            transforms = try items.map { item throws(FiregateError) in try FieldTransform(json: item) }
        }
        if let mask = json.member("updateMask"), mask != .null, update == nil {
            throw .invalidArgument("updateMask is only allowed with an update.")
        }
        let precondition = try Precondition(json: json.member("currentDocument"))
        if let update {
            guard let name = update.member("name")?.stringValue else { throw .invalidArgument("An update write needs the document name.") }
            let path = try database.path(fromName: name)
            guard path.isDocument else { throw .invalidArgument("\"\(name)\" is not a document name.") }
            let fields = try Value.parseFields(update.member("fields"))
            try Write.validateFieldNames(fields)
            var mask: [FieldPath]?
            if let maskJSON = json.member("updateMask"), maskJSON != .null {
                let paths = maskJSON.member("fieldPaths") ?? .null
                guard let list = paths == .null ? [] : paths.arrayValue else { throw .invalidArgument("updateMask.fieldPaths must be a list.") }
                mask = try list.map { item throws(FiregateError) in
                    guard let text = item.stringValue else { throw .invalidArgument("updateMask.fieldPaths must be strings.") }
                    return try FieldPath.parseWritable(text)
                }
            }
            self.init(path: path, operation: .update(fields: fields, mask: mask), transforms: transforms, precondition: precondition)
        } else if let delete {
            guard let name = delete.stringValue else { throw .invalidArgument("delete must be a document name.") }
            let path = try database.path(fromName: name)
            guard path.isDocument else { throw .invalidArgument("\"\(name)\" is not a document name.") }
            self.init(path: path, operation: .delete, precondition: precondition)
        } else if let transform {
            guard let name = transform.member("document")?.stringValue else { throw .invalidArgument("A transform write needs the document name.") }
            let path = try database.path(fromName: name)
            guard path.isDocument else { throw .invalidArgument("\"\(name)\" is not a document name.") }
            let fieldTransforms = transform.member("fieldTransforms") ?? .null
            guard let items = fieldTransforms == .null ? [] : fieldTransforms.arrayValue else { throw .invalidArgument("fieldTransforms must be a list.") }
            let list = try items.map { item throws(FiregateError) in try FieldTransform(json: item) }
            self.init(path: path, operation: .transform, transforms: list, precondition: precondition)
        } else {
            guard let name = verify?.stringValue else { throw .invalidArgument("verify must be a document name.") }
            let path = try database.path(fromName: name)
            guard path.isDocument else { throw .invalidArgument("\"\(name)\" is not a document name.") }
            self.init(path: path, operation: .verify, precondition: precondition)
        }
        var seen = Set<FieldPath>()
        for transform in self.transforms {
            guard seen.insert(transform.field).inserted else {
                throw .invalidArgument("Field \(transform.field) is transformed more than once in one write.")
            }
        }
    }

    /// Field names of written data must not be empty or reserved (`__.*__`).
    /// Also refuses arrays directly inside arrays, which documents cannot store (filter values may
    /// hold them: `in [["a"], ["b"]]`).
    public static func validateFieldNames(_ fields: [String: Value]) throws(FiregateError) {
        // A vector (`{"__type__": "__vector__", "value": [doubles]}`) and the BSON types are
        // the maps allowed reserved names.
        if Value.isVector(fields), fields.count == 2, case .array(let items)? = fields["value"] {
            guard items.allSatisfy(\.isNumber) else { throw .invalidArgument("A vector's values must be numbers.") }
            // The emulator's words.
            guard !items.isEmpty else { throw .invalidArgument("Cannot have a zero length vector.") }
            return
        }
        if try BSONKind.normalizedForWrite(fields) != nil { return }
        for (name, value) in fields {
            if name.isEmpty { throw .invalidArgument("Field names must not be empty.") }
            if FieldPath.isReserved(name) {
                throw .invalidArgument("Field name \"\(name)\" is reserved: names matching __.*__ cannot be written.")
            }
            try validateStorable(value)
        }
    }

    static func validateStorable(_ value: Value) throws(FiregateError) {
        switch value {
        case .map(let inner): try validateFieldNames(inner)
        case .array(let items):
            for item in items {
                if case .array = item { throw .invalidArgument("Cannot have an array directly inside an array.") }
                try validateStorable(item)
            }
        default: break
        }
    }
}

extension Precondition {
    public init(json: JSON?) throws(FiregateError) {
        self.init()
        guard let json, json != .null else { return }
        guard case .object = json else { throw .invalidArgument("currentDocument must be an object.") }
        if let exists = json.member("exists"), exists != .null {
            guard let b = exists.boolValue else { throw .invalidArgument("currentDocument.exists must be a boolean.") }
            self.exists = b
        }
        if let time = json.member("updateTime"), time != .null {
            guard let text = time.stringValue, let t = Timestamp(rfc3339: text) else {
                throw .invalidArgument("currentDocument.updateTime must be an RFC 3339 timestamp.")
            }
            self.updateTime = t
        }
        if exists != nil, updateTime != nil {
            throw .invalidArgument("A precondition can set exists or updateTime, not both.")
        }
    }
}

extension FieldTransform {
    public init(json: JSON) throws(FiregateError) {
        guard let path = json.member("fieldPath")?.stringValue else { throw .invalidArgument("A field transform needs a fieldPath.") }
        let field = try FieldPath.parseWritable(path)
        func operand(_ name: String) throws(FiregateError) -> Value? {
            guard let j = json.member(name), j != .null else { return nil }
            return try Value(json: j)
        }
        func values(_ name: String) throws(FiregateError) -> [Value]? {
            guard let j = json.member(name), j != .null else { return nil }
            let list = j.member("values") ?? .null
            guard let items = list == .null ? [] : list.arrayValue else { throw .invalidArgument("\(name).values must be a list.") }
            return try items.map { item throws(FiregateError) in try Value(json: item) }
        }
        // One transformation per field transform (a oneof): production refuses the payload.
        let kinds = ["setToServerValue", "increment", "maximum", "minimum", "appendMissingElements", "removeAllFromArray"]
            .filter { json.member($0).map { $0 != .null } ?? false }
        if kinds.count > 1 {
            throw .invalidArgument("Invalid JSON payload received. Oneof field 'transform_type' is already set. Cannot set '\(kinds[1])'.")
        }
        if let server = json.member("setToServerValue"), server != .null {
            guard server == .string("REQUEST_TIME") || server == .int(1) else {
                throw .invalidArgument("setToServerValue must be REQUEST_TIME.")
            }
            self.init(field: field, operation: .requestTime)
        } else if let v = try operand("increment") {
            guard v.isNumber else { throw .invalidArgument("increment needs a number.") }
            self.init(field: field, operation: .increment(v))
        } else if let v = try operand("maximum") {
            guard v.isNumber else { throw .invalidArgument("maximum needs a number.") }
            self.init(field: field, operation: .maximum(v))
        } else if let v = try operand("minimum") {
            guard v.isNumber else { throw .invalidArgument("minimum needs a number.") }
            self.init(field: field, operation: .minimum(v))
        } else if let v = try values("appendMissingElements") {
            self.init(field: field, operation: .appendMissingElements(v))
        } else if let v = try values("removeAllFromArray") {
            self.init(field: field, operation: .removeAllFromArray(v))
        } else {
            throw .invalidArgument("Field transform for \(path) has no transformation.")
        }
    }
}
