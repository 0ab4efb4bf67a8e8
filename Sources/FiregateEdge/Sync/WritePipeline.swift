import FiregateModel

/// The write stream's bookkeeping (the SDK's RemoteStore write pipeline): whether a sender
/// runs, the batches on the wire, and the backoff after a transient failure.
struct WritePipeline {
    /// Batches the SDK's write stream has on the wire at once (remote_store.ts MAX_PENDING_WRITES).
    static let maxPendingWrites = 10

    private(set) var sending = false
    /// Batches sent to the backend whose answer has not been applied yet.
    private(set) var inFlight: Set<Int64> = []
    /// The next retry's wait in seconds; 0 when the last round succeeded.
    private(set) var retryDelay: Double = 0

    /// Starts a sender unless one runs; true when the caller is it.
    mutating func startSending() -> Bool {
        guard !sending else { return false }
        sending = true
        return true
    }

    mutating func stopSending() {
        sending = false
    }

    /// The oldest batches of `queue` another sender does not have on the wire (order kept),
    /// now on the wire.
    mutating func takeRound(from queue: [MutationBatch]) -> [MutationBatch] {
        let round = Array(queue.prefix(WritePipeline.maxPendingWrites).prefix { !inFlight.contains($0.id) })
        for batch in round { inFlight.insert(batch.id) }
        return round
    }

    /// Puts one batch on the wire; false when another sender has it.
    mutating func take(_ batchID: Int64) -> Bool {
        inFlight.insert(batchID).inserted
    }

    mutating func answered(_ batchIDs: [Int64]) {
        for id in batchIDs { inFlight.remove(id) }
    }

    mutating func succeeded() {
        retryDelay = 0
    }

    /// Backoff as the SDK's: 1 s, ×1.5, at most 60 s; the wait before the next retry.
    mutating func backOff() -> Double {
        retryDelay = retryDelay == 0 ? 1 : min(retryDelay * 1.5, 60)
        return retryDelay
    }
}
