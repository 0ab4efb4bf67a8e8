import FiregateBackend
import FiregateModel

/// One user write call (set, update, delete or a batch): the unit the SDK queues, sends and
/// acknowledges as a whole.
public struct MutationBatch: Sendable, Equatable {
    public let id: Int64
    public let localWriteTime: Timestamp
    public let writes: [Write]

    public var paths: Set<ResourcePath> { Set(writes.map(\.path)) }

    /// Approximate bytes the batch takes in the cache: each write's document name, fields and
    /// transforms, plus fixed overhead.
    public var byteSize: Int {
        writes.reduce(32) { total, write in
            var size = DocumentLimits.nameSize(write.path) + 16 + write.transforms.count * 16
            if case .update(let fields, let mask) = write.operation {
                size += DocumentLimits.size(of: fields) + (mask?.count ?? 0) * 8
            }
            return total + size
        }
    }
}

/// A queued write's fate, for `pendingWrites/{id}` and `?waitFor=ack`.
public enum WriteState: Sendable, Equatable {
    case pending
    case acknowledged(CommitResult)
    case rejected(FiregateError)

    public var name: String {
        switch self {
        case .pending: "pending"
        case .acknowledged: "acknowledged"
        case .rejected: "rejected"
        }
    }
}

/// The mutation queue: batches in id order, oldest first.
public struct MutationQueue: Sendable {
    public private(set) var batches: [MutationBatch] = []
    public private(set) var nextID: Int64 = 1

    public init() {}

    /// Bytes of the queued batches, kept up to date.
    public private(set) var byteSize = 0

    public mutating func restore(_ batches: [MutationBatch]) {
        self.batches = batches.sorted { $0.id < $1.id }
        nextID = (self.batches.last?.id ?? 0) + 1
        byteSize = batches.reduce(0) { $0 + $1.byteSize }
    }

    /// Makes the next batch id at least `id`: ids stay unique over every user's queue.
    public mutating func reserveIDs(from id: Int64) {
        nextID = Swift.max(nextID, id)
    }

    public mutating func add(writes: [Write], localWriteTime: Timestamp) -> MutationBatch {
        let batch = MutationBatch(id: nextID, localWriteTime: localWriteTime, writes: writes)
        nextID += 1
        batches.append(batch)
        byteSize += batch.byteSize
        return batch
    }

    @discardableResult
    public mutating func remove(_ id: Int64) -> MutationBatch? {
        guard let i = batches.firstIndex(where: { $0.id == id }) else { return nil }
        byteSize -= batches[i].byteSize
        return batches.remove(at: i)
    }

    public var first: MutationBatch? { batches.first }
    /// Whether the queue holds the batch (ids ascend, so this is a binary search).
    public func contains(_ id: Int64) -> Bool {
        var low = 0, high = batches.count
        while low < high {
            let mid = (low + high) / 2
            if batches[mid].id < id { low = mid + 1 } else { high = mid }
        }
        return low < batches.count && batches[low].id == id
    }
    public var isEmpty: Bool { batches.isEmpty }
    public var count: Int { batches.count }
    public var highestID: Int64? { batches.last?.id }

    /// Paths with a pending local mutation.
    public var mutatedPaths: Set<ResourcePath> { batches.reduce(into: Set()) { $0.formUnion($1.paths) } }

    public mutating func removeAll() {
        batches.removeAll()
        byteSize = 0
    }
}
