import FiregateModel

/// Who waits on the client's writes (the SDK's mutationUserCallbacks and
/// pendingWritesCallbacks): each batch's state, the waiters on one batch's answer, and the
/// `waitForPendingWrites` callers. Changing state here hands back the continuations to resume;
/// the coordinator resumes them.
struct WriteCallbacks {
    typealias AckWaiter = (id: Int, continuation: CheckedContinuation<WriteState, Never>)
    typealias PendingWaiter = (id: Int, upTo: Int64, continuation: CheckedContinuation<Bool, Never>)

    /// Each batch's state: pending ones always, the last settled ones for `GET …/pendingWrites/{id}`.
    private(set) var states = WriteOutcomes<WriteState>()
    private var ackWaiters: [Int64: [AckWaiter]] = [:]
    private var pendingWaiters: [PendingWaiter] = []
    private var nextWaiterID = 0

    subscript(batchID: Int64) -> WriteState? { states[batchID] }

    /// A persistent client's restored batches, each pending.
    mutating func restore(_ restored: WriteOutcomes<WriteState>) {
        states = restored
    }

    mutating func pending(_ batchID: Int64) {
        states.pending(batchID, .pending)
    }

    mutating func forget(_ batchID: Int64) {
        states.forget(batchID)
    }

    /// A new waiter's id, for its timeout.
    mutating func nextID() -> Int {
        nextWaiterID += 1
        return nextWaiterID
    }

    mutating func waitForAck(_ batchID: Int64, _ waiter: AckWaiter) {
        ackWaiters[batchID, default: []].append(waiter)
    }

    mutating func waitForPendingWrites(_ waiter: PendingWaiter) {
        pendingWaiters.append(waiter)
    }

    /// The ack waiter `waiterID` timed out: its continuation, if it still waits.
    mutating func expireAckWaiter(_ batchID: Int64, _ waiterID: Int) -> CheckedContinuation<WriteState, Never>? {
        guard let i = ackWaiters[batchID]?.firstIndex(where: { $0.id == waiterID }) else { return nil }
        return ackWaiters[batchID]?.remove(at: i).continuation
    }

    /// The `waitForPendingWrites` caller `waiterID` timed out: its continuation, if it still waits.
    mutating func expirePendingWaiter(_ waiterID: Int) -> CheckedContinuation<Bool, Never>? {
        guard let i = pendingWaiters.firstIndex(where: { $0.id == waiterID }) else { return nil }
        return pendingWaiters.remove(at: i).continuation
    }

    /// Records a batch's final state: the waiters on it, and the `waitForPendingWrites` callers
    /// whose batches are all settled now (`lowestQueued`: the oldest batch still queued).
    mutating func settle(_ batchID: Int64, _ state: WriteState, lowestQueued: Int64?)
        -> (acks: [CheckedContinuation<WriteState, Never>], drained: [CheckedContinuation<Bool, Never>]) {
        states.settle(batchID, state)
        let acks = (ackWaiters.removeValue(forKey: batchID) ?? []).map(\.continuation)
        let lowest = lowestQueued ?? Int64.max
        let drained = pendingWaiters.filter { $0.upTo < lowest }.map(\.continuation)
        pendingWaiters.removeAll { $0.upTo < lowest }
        return (acks, drained)
    }

    /// The user changed: every `waitForPendingWrites` caller ends (false).
    mutating func endPendingWaiters() -> [CheckedContinuation<Bool, Never>] {
        defer { pendingWaiters.removeAll() }
        return pendingWaiters.map(\.continuation)
    }
}
