import FiregateModel

/// Injected persistence failures of one tab (`PUT /clients/{tab}/faults`, the multi-tab spec
/// tests' failDatabase): the tab's own IndexedDB transactions — its lease refresh, reading
/// what another tab changed, becoming primary — and, while the tab is primary, the shared
/// engine's (`StorageFaults`).
public struct TabStorageFaults: Sendable, Equatable {
    /// Transactions only a tab runs (the SDK's names).
    public enum Operation: String, Sendable, CaseIterable {
        /// The metadata refresh and lease attempt: a failed one changes nothing.
        case refreshLease = "updateClientMetadataAndTryBecomePrimary"
        /// Reading the documents another tab's notification names: the tab's views wait.
        case getNewDocumentChanges = "Get new document changes"
        /// Reading a batch another tab settled: the tab's views and write callbacks wait.
        case lookupMutationDocuments = "Lookup mutation documents"
        /// Reading the targets to listen to when becoming primary: the transition fails.
        case getTargetData = "Get target data"
    }

    public private(set) var tab: Set<Operation> = []
    /// The engine's operations, applied to it while this tab is primary.
    public private(set) var engine = StorageFaults()

    public init() {}

    public func fails(_ operation: Operation) -> Bool { tab.contains(operation) }

    /// Becoming primary allocates every active target and reads its data.
    public var failsPrimaryTransition: Bool { tab.contains(.getTargetData) || engine.fails(.allocateTarget) }

    /// Whether the tab cannot read what other tabs change (its views wait).
    public var holdsViews: Bool { tab.contains(.getNewDocumentChanges) || tab.contains(.lookupMutationDocuments) }

    /// `{"storage": [names…]}` with the tab's and the engine's names; `false` or `[]` heals all.
    public mutating func update(_ json: JSON) throws(FiregateError) {
        guard case .object = json else { throw .invalidArgument("Faults must be a JSON object.") }
        guard let storage = json["storage"], storage != .null else { return }
        guard storage != .bool(false) else {
            self = TabStorageFaults()
            return
        }
        guard let items = storage.arrayValue else { throw .invalidArgument("storage must be an array of operation names (or false).") }
        var tab: Set<Operation> = []
        var engineNames: [JSON] = []
        for item in items {
            if let name = item.stringValue, let operation = Operation(rawValue: name) {
                tab.insert(operation)
            } else {
                engineNames.append(item)
            }
        }
        var engine = StorageFaults()
        do {
            try engine.update(["storage": .array(engineNames)])
        } catch {
            throw .invalidArgument(error.message + " A tab also takes " + Operation.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ") + ".")
        }
        self.tab = tab
        self.engine = engine
    }

    public var json: JSON {
        let names = Operation.allCases.filter(tab.contains).map { JSON.string($0.rawValue) }
        return ["storage": .array((engine.json["storage"]?.arrayValue ?? []) + names)]
    }
}
