/// A dead connection's onDisconnect operations as a replica claimed them from a shared store
/// (docs/replicas.md), to run from `done` on; the claimer records its progress under `connection`.
public struct OrphanedDisconnect: Sendable {
    public var namespace: String
    public var connection: String
    /// The operations, as JSON (an array).
    public var operations: [UInt8]
    /// How many of them ran already (a claimer before this one got that far).
    public var done: Int

    public init(namespace: String, connection: String, operations: [UInt8], done: Int) {
        self.namespace = namespace
        self.connection = connection
        self.operations = operations
        self.done = done
    }
}

/// A claimer's progress through an `OrphanedDisconnect`: `done` of `total` operations ran. A
/// shared store records it in the transaction of the write it travels with, so an operation
/// and its progress are stored together or not at all; recorded apart (an operation that
/// failed, or wrote nothing), it only ever moves forward. Once `done` reaches `total` the row
/// goes. A store of one process has no such rows and ignores it.
public struct DisconnectProgress: Sendable, Equatable {
    public var replica: String
    public var connection: String
    public var done: Int
    public var total: Int

    public init(replica: String, connection: String, done: Int, total: Int) {
        self.replica = replica
        self.connection = connection
        self.done = done
        self.total = total
    }
}
