import FiregateModel

/// Injected failures of the client's local persistence (the spec tests' `failDatabase`): each
/// operation named here fails as an IndexedDB transaction of that name fails in the SDK, until
/// the list is cleared. The names are the SDK's local-store transaction names.
public struct StorageFaults: Sendable, Equatable {
    public enum Operation: String, Sendable, CaseIterable {
        case allocateTarget = "Allocate target"
        case releaseTarget = "Release target"
        case locallyWriteMutations = "Locally write mutations"
        case applyRemoteEvent = "Apply remote event"
        case acknowledgeBatch = "Acknowledge batch"
        case rejectBatch = "Reject batch"
        case notifyLocalViewChanges = "notifyLocalViewChanges"
        case getLastRemoteSnapshotVersion = "Get last remote snapshot version"
        case handleUserChange = "Handle user change"
    }

    public private(set) var failing: Set<Operation> = []

    public init() {}

    public func fails(_ operation: Operation) -> Bool { failing.contains(operation) }

    /// `{"storage": ["Allocate target", …]}`; `[]` (or `false`) heals every operation.
    public mutating func update(_ json: JSON) throws(FiregateError) {
        guard case .object = json else { throw .invalidArgument("Faults must be a JSON object.") }
        guard let storage = json["storage"], storage != .null else { return }
        if storage == .bool(false) {
            failing = []
            return
        }
        guard let items = storage.arrayValue else {
            throw .invalidArgument("storage must be an array of operation names (or false).")
        }
        var next: Set<Operation> = []
        for item in items {
            guard let name = item.stringValue, let operation = Operation(rawValue: name) else {
                throw .invalidArgument("Unknown storage operation \(JSONWriter.string(item)); expected one of \(Operation.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")).")
            }
            next.insert(operation)
        }
        failing = next
    }

    public var json: JSON { ["storage": .array(Operation.allCases.filter(failing.contains).map { .string($0.rawValue) })] }

    /// The error a failed transaction surfaces with (an IndexedDB failure).
    static func error(_ operation: Operation) -> FiregateError {
        FiregateError(.unavailable, "Simulated storage failure: the local persistence could not \(operation.rawValue.lowercased()).")
    }
}
