import FiregateModel

/// google.firestore.v1.Write → `Write`, straight from the message (no proto3-JSON step: the gRPC
/// Commit fast path). It checks what `Write(json:)` checks; callers that must answer with the REST
/// parser's exact messages fall back to it when this throws.
extension Write {
    public init(proto: Google_Firestore_V1_Write, database: DatabaseID) throws(FiregateError) {
        let transforms = try proto.updateTransforms.map { item throws(FiregateError) in try FieldTransform(proto: item) }
        var isUpdate = false
        if case .update? = proto.operation { isUpdate = true }
        if !isUpdate, !transforms.isEmpty { throw .invalidArgument("updateTransforms are only allowed with an update.") }
        if !isUpdate, proto.hasUpdateMask { throw .invalidArgument("updateMask is only allowed with an update.") }
        let precondition = try Precondition(proto: proto.hasCurrentDocument ? proto.currentDocument : nil)
        switch proto.operation {
        case .update(let document)?:
            let path = try Write.documentPath(document.name, database)
            let fields = try Value.fields(proto: document.fields)
            try Write.validateFieldNames(fields)
            let mask = proto.hasUpdateMask
                ? try proto.updateMask.fieldPaths.map { text throws(FiregateError) in try FieldPath.parseWritable(text) } : nil
            self.init(path: path, operation: .update(fields: fields, mask: mask), transforms: transforms, precondition: precondition)
        case .delete(let name)?:
            self.init(path: try Write.documentPath(name, database), operation: .delete, precondition: precondition)
        case .verify(let name)?:
            self.init(path: try Write.documentPath(name, database), operation: .verify, precondition: precondition)
        case .transform(let transform)?:
            let list = try transform.fieldTransforms.map { item throws(FiregateError) in try FieldTransform(proto: item) }
            self.init(path: try Write.documentPath(transform.document, database), operation: .transform, transforms: list, precondition: precondition)
        case nil:
            throw .invalidArgument("A write must have exactly one of update, delete, transform or verify.")
        }
        var seen = Set<FieldPath>()
        for transform in self.transforms where !seen.insert(transform.field).inserted {
            throw .invalidArgument("Field \(transform.field) is transformed more than once in one write.")
        }
    }

    private static func documentPath(_ name: String, _ database: DatabaseID) throws(FiregateError) -> ResourcePath {
        let path = try database.path(fromName: name)
        guard path.isDocument else { throw .invalidArgument("\"\(name)\" is not a document name.") }
        return path
    }
}

extension Precondition {
    public init(proto: Google_Firestore_V1_Precondition?) throws(FiregateError) {
        self.init()
        switch proto?.conditionType {
        case .exists(let exists)?: self.exists = exists
        case .updateTime(let time)?:
            guard time.seconds >= Timestamp.minSeconds, time.seconds <= Timestamp.maxSeconds, (0..<1_000_000_000).contains(time.nanos) else {
                throw .invalidArgument("currentDocument.updateTime must be an RFC 3339 timestamp.")
            }
            self.updateTime = Timestamp(proto: time)
        case nil: break
        }
    }
}

extension FieldTransform {
    public init(proto: Google_Firestore_V1_DocumentTransform.FieldTransform) throws(FiregateError) {
        let field = try FieldPath.parseWritable(proto.fieldPath)
        func number(_ value: Google_Firestore_V1_Value, _ name: String) throws(FiregateError) -> Value {
            let number = try Value(proto: value)
            guard number.isNumber else { throw .invalidArgument("\(name) needs a number.") }
            return number
        }
        func values(_ array: Google_Firestore_V1_ArrayValue) throws(FiregateError) -> [Value] {
            try array.values.map { item throws(FiregateError) in try Value(proto: item) }
        }
        switch proto.transformType {
        case .setToServerValue(let value)?:
            guard value == .requestTime else { throw .invalidArgument("setToServerValue must be REQUEST_TIME.") }
            self.init(field: field, operation: .requestTime)
        case .increment(let value)?: self.init(field: field, operation: .increment(try number(value, "increment")))
        case .maximum(let value)?: self.init(field: field, operation: .maximum(try number(value, "maximum")))
        case .minimum(let value)?: self.init(field: field, operation: .minimum(try number(value, "minimum")))
        case .appendMissingElements(let array)?: self.init(field: field, operation: .appendMissingElements(try values(array)))
        case .removeAllFromArray(let array)?: self.init(field: field, operation: .removeAllFromArray(try values(array)))
        case nil: throw .invalidArgument("Field transform for \(proto.fieldPath) has no transformation.")
        }
    }
}
