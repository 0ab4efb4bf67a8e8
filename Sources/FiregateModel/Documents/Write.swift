/// A condition a write requires of the document it touches.
public struct Precondition: Sendable, Equatable {
    public var exists: Bool?
    public var updateTime: Timestamp?

    public init(exists: Bool? = nil, updateTime: Timestamp? = nil) {
        self.exists = exists
        self.updateTime = updateTime
    }

    public var isEmpty: Bool { exists == nil && updateTime == nil }
}

/// One server-side field transform (google.firestore.v1.DocumentTransform.FieldTransform).
public struct FieldTransform: Sendable, Equatable {
    public enum Operation: Sendable, Equatable {
        case requestTime
        case increment(Value)
        case maximum(Value)
        case minimum(Value)
        case appendMissingElements([Value])
        case removeAllFromArray([Value])
    }

    public var field: FieldPath
    public var operation: Operation

    public init(field: FieldPath, operation: Operation) {
        self.field = field
        self.operation = operation
    }
}

/// One write of a commit: set/update, delete, transform-only or verify, on one document.
public struct Write: Sendable, Equatable {
    public enum Operation: Sendable, Equatable {
        /// Replace the document's fields, or with a mask only the masked paths.
        case update(fields: [String: Value], mask: [FieldPath]?)
        case delete
        /// Only transforms (and the precondition); creates the document when missing.
        case transform
        /// A precondition check only (the SDK's `verify` write in transactions).
        case verify
    }

    public var path: ResourcePath
    public var operation: Operation
    public var transforms: [FieldTransform]
    public var precondition: Precondition

    public init(path: ResourcePath, operation: Operation, transforms: [FieldTransform] = [], precondition: Precondition = Precondition()) {
        self.path = path
        self.operation = operation
        self.transforms = transforms
        self.precondition = precondition
    }
}

/// The outcome of applying one write to a document.
public struct WriteOutcome: Sendable, Equatable {
    /// The document after the write; nil when it is deleted or stays missing.
    public var document: Document?
    /// One value per transform, in order; `.null` for the array transforms.
    public var transformResults: [Value]
    /// Whether the stored document changed at all.
    public var changed: Bool
}

extension Write {
    /// Applies this write to `existing`, checking the precondition. `serverTime` gives the value
    /// of a REQUEST_TIME transform from the field's previous value (the commit time on the server,
    /// a pending sentinel in an edge client's local view).
    public func apply(
        to existing: Document?,
        commitTime: Timestamp,
        database: DatabaseID,
        serverTime: (Value?) -> Value
    ) throws(FiregateError) -> WriteOutcome {
        try checkPrecondition(existing, database: database, commitTime: commitTime)
        var fields: [String: Value]
        switch operation {
        case .delete:
            return WriteOutcome(document: nil, transformResults: [], changed: existing != nil)
        case .verify:
            return WriteOutcome(document: existing, transformResults: [], changed: false)
        case .update(let newFields, nil):
            fields = newFields
        case .update(let newFields, let mask?):
            fields = existing?.fields ?? [:]
            for path in mask {
                Document.set(Document.value(in: newFields, at: path.segments[...]), in: &fields, at: path.segments[...])
            }
        case .transform:
            fields = existing?.fields ?? [:]
        }
        var results: [Value] = []
        results.reserveCapacity(transforms.count)
        for transform in transforms {
            let current = Document.value(in: fields, at: transform.field.segments[...])
            let (newValue, result) = transform.operation.apply(to: current, serverTime: serverTime)
            Document.set(newValue, in: &fields, at: transform.field.segments[...])
            results.append(result)
        }
        try DocumentLimits.validate(path: path, fields: fields, database: database)
        if let existing, existing.fields == fields {
            return WriteOutcome(document: existing, transformResults: results, changed: false)
        }
        let document = Document(path: path, fields: fields, createTime: existing?.createTime ?? commitTime, updateTime: commitTime)
        return WriteOutcome(document: document, transformResults: results, changed: true)
    }

    func checkPrecondition(_ existing: Document?, database: DatabaseID, commitTime: Timestamp) throws(FiregateError) {
        let name = database.resourceName(path)
        // No version can have been written after the commit: a base version from the future is
        // a bad request, not a mismatch (production answers INVALID_ARGUMENT).
        if let required = precondition.updateTime, commitTime < required {
            throw .invalidArgument("The precondition's update time \(required.rfc3339) is in the future.")
        }
        if let exists = precondition.exists {
            if exists, existing == nil {
                throw .notFound(operation == .delete ? "No document to delete: \(name)" : "No document to update: \(name)")
            }
            if !exists, existing != nil {
                throw .alreadyExists("Document already exists: \(name)")
            }
        }
        if let required = precondition.updateTime {
            guard let existing else {
                throw .notFound("No document to update: \(name)")
            }
            if existing.updateTime != required {
                throw .failedPrecondition("the stored version (\(existing.updateTime.microseconds)) does not match the required base version (\(required.microseconds))")
            }
        }
    }
}

extension FieldTransform.Operation {
    /// The field's new value and the transform result reported to the caller.
    func apply(to current: Value?, serverTime: (Value?) -> Value) -> (Value, Value) {
        switch self {
        case .requestTime:
            let value = serverTime(current)
            return (value, value)
        case .increment(let operand):
            let value = FieldTransform.Operation.add(current, operand)
            return (value, value)
        case .maximum(let operand):
            let value = FieldTransform.Operation.extreme(current, operand, wantLarger: true)
            return (value, value)
        case .minimum(let operand):
            let value = FieldTransform.Operation.extreme(current, operand, wantLarger: false)
            return (value, value)
        case .appendMissingElements(let values):
            var array = current?.arrayElements ?? []
            for value in values where !array.contains(where: { Value.equals($0, value) }) {
                array.append(value)
            }
            return (.array(array), .null)
        case .removeAllFromArray(let values):
            let array = (current?.arrayElements ?? []).filter { element in !values.contains(where: { Value.equals($0, element) }) }
            return (.array(array), .null)
        }
    }

    /// Integer addition saturates at the int64 bounds; any double makes it a double.
    static func add(_ current: Value?, _ operand: Value) -> Value {
        switch (current, operand) {
        case (.integer(let a)?, .integer(let b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            if overflow { return .integer(b > 0 ? .max : .min) }
            return .integer(sum)
        case (.integer(let a)?, .double(let b)): return .double(Double(a) + b)
        case (.double(let a)?, .integer(let b)): return .double(a + Double(b))
        case (.double(let a)?, .double(let b)): return .double(a + b)
        default: return operand
        }
    }

    /// Maximum/minimum: a non-number is replaced; NaN wins; ties keep the current value.
    static func extreme(_ current: Value?, _ operand: Value, wantLarger: Bool) -> Value {
        guard let current, current.isNumber else { return operand }
        if current.isNaN { return current }
        if operand.isNaN { return operand }
        let c = Value.compareNumbers(operand, current)
        if c == 0 { return current }
        return (c > 0) == wantLarger ? operand : current
    }
}
