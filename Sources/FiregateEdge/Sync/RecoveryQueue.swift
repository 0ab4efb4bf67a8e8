import FiregateBackend
import FiregateModel

/// What the SDK retries after its persistence failed (AsyncQueue.enqueueRetryable): one
/// operation at a time, oldest first, each attempt when the `async_queue_retry` timer fires.
/// While anything here waits, the network stays down (OfflineCause.IndexedDbFailed, or a user
/// change that could not be applied).
struct RecoveryQueue {
    enum Operation {
        /// Reading the last remote snapshot version: the probe after a failed watch snapshot.
        case probe
        /// Storing the server's acknowledgement of a batch.
        case acknowledge(MutationBatch, CommitResult)
        /// Storing the server's rejection of a batch.
        case reject(MutationBatch, FiregateError)
        /// Switching to another user's mutation queue.
        case userChange(ClientAuth?)

        /// The storage operation the attempt runs (it fails while that one is failing).
        var storageOperation: StorageFaults.Operation {
            switch self {
            case .probe: .getLastRemoteSnapshotVersion
            case .acknowledge: .acknowledgeBatch
            case .reject: .rejectBatch
            case .userChange: .handleUserChange
            }
        }
    }

    private(set) var pending: [Operation] = []

    var isEmpty: Bool { pending.isEmpty }

    /// A user change is waiting: later ones queue behind it, in order.
    var hasUserChange: Bool {
        pending.contains { if case .userChange = $0 { true } else { false } }
    }

    mutating func enqueue(_ operation: Operation) {
        pending.append(operation)
    }

    /// The oldest operation, when its storage works again; it leaves the queue.
    mutating func takeRunnable(_ faults: StorageFaults) -> Operation? {
        guard let first = pending.first, !faults.fails(first.storageOperation) else { return nil }
        return pending.removeFirst()
    }

    /// Whether a failed storage operation (not a user change) waits: the client is offline.
    var holdsStorageFailure: Bool {
        pending.contains { if case .userChange = $0 { false } else { true } }
    }

    mutating func removeAll() {
        pending.removeAll()
    }
}
