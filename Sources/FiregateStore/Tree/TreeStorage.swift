import FiregateModel

/// Where trees persist: one row per leaf, plus one per inner node that carries a priority,
/// keyed by (namespace, path). A write touches only the rows under and above its location, so
/// its cost follows the size of the write, not of the tree.
///
/// A narrow protocol so that a PostgreSQL store can replace SQLite.
public protocol TreeStorage: Sendable {
    /// Every row of `namespace`, in no particular order.
    func loadRows(namespace: String) throws -> [TreeStorageRow]
    /// The namespaces that hold any data.
    func namespaces() throws -> [String]
    /// Applies the batches in order, atomically and durably, before returning.
    func commit(_ batches: [TreeStorageBatch]) async throws
    /// Calls `apply`, in log order per namespace, with the `change` of each batch other replicas
    /// commit to the namespaces this replica has in memory but does not own.
    func follow(_ apply: @escaping @Sendable (String, JSON) -> Void)
    func writeRefusal(namespace: String) -> FiregateError?
}

extension TreeStorage {
    /// A store of one process (SQLite, memory) has no other replica to follow.
    public func follow(_ apply: @escaping @Sendable (String, JSON) -> Void) {}
    /// Why this replica may not write the namespace now (another live replica owns it); a store
    /// of one process never refuses.
    public func writeRefusal(namespace: String) -> FiregateError? { nil }
}

/// One stored row. `value` is a leaf as JSON text, nil for an inner node that only records
/// its priority; `priority` is the priority as JSON text.
public struct TreeStorageRow: Sendable, Equatable {
    /// Keys joined with `/`; the root is the empty string.
    public var path: String
    public var value: String?
    public var priority: String?

    public init(path: String, value: String?, priority: String?) {
        self.path = path
        self.value = value
        self.priority = priority
    }
}

/// One row-level change.
public enum TreeStorageOperation: Sendable, Equatable {
    /// Remove the row at the path and every row below it.
    case deleteSubtree(String)
    /// Remove the row at exactly this path.
    case deleteRow(String)
    case putRow(TreeStorageRow)
}

/// The row changes of one write to one namespace.
public struct TreeStorageBatch: Sendable, Equatable {
    public var namespace: String
    public var operations: [TreeStorageOperation]
    /// The write as the engine applies it (opaque to the store), kept in a shared store's
    /// commit log so that other replicas can apply it too.
    public var change: JSON?
    /// A reaper's progress, stored with the write (see `DisconnectProgress`).
    public var progress: DisconnectProgress?
    /// An edge client's queued write from another replica, stored with the write or the write
    /// is not made (see `QueuedWriteReceipt`).
    public var receipt: QueuedWriteReceipt?

    public init(namespace: String, operations: [TreeStorageOperation], change: JSON? = nil, progress: DisconnectProgress? = nil,
                receipt: QueuedWriteReceipt? = nil) {
        self.namespace = namespace
        self.operations = operations
        self.change = change
        self.progress = progress
        self.receipt = receipt
    }
}
