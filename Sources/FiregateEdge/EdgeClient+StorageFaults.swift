import FiregateBackend
import FiregateModel

/// Injected persistence failures (`PUT /clients/{id}/faults`, the spec tests' failDatabase) and
/// the SDK's recovery from them: a failed listen or local write is refused at once; a failed
/// acknowledgement, rejection or watch snapshot takes the network down until the operation
/// succeeds on a retry (the `async_queue_retry` timer); a failed user change waits the same way.
extension EdgeClient {
    public func setFaults(_ json: JSON) throws(FiregateError) -> JSON {
        try local.updateFaults(json)
        return faultsJSON
    }

    public var faultsJSON: JSON { local.faults.json.withMember("recovering", .int(Int64(remote.recovery.pending.count))) }

    /// Throws the failure of `operation` if it is failing.
    func checkStorage(_ operation: StorageFaults.Operation) throws(FiregateError) {
        if local.faults.fails(operation) { throw StorageFaults.error(operation) }
    }

    /// disableNetworkUntilRecovery (or a user change that failed): watch and writes stop until
    /// `operation` succeeds on a retry; a storage failure also makes the client offline.
    func suspendNetwork(retrying operation: RecoveryQueue.Operation) {
        remote.enqueueRecovery(operation)
        holdNetwork(offline: remote.recovery.holdsStorageFailure)
    }

    private func holdNetwork(offline: Bool) {
        guard remote.hold(.storageFailure) else { return }
        stopWatch()
        remote.suspendScripted(offline: offline)
        guard offline, remote.network.online else { return }
        queries.markAllNotCurrent()
        updateViews()
        raiseOnlineState()
    }

    /// The `async_queue_retry` timer: the oldest waiting operation runs if its storage works
    /// again; the network comes back once no failed storage operation waits.
    func retryRecovery() -> Bool {
        guard !remote.recovery.isEmpty else { return false }
        guard let operation = remote.takeRunnableRecovery(local.faults) else {
            // Still failing: the attempt itself takes the network down again.
            holdNetwork(offline: remote.recovery.holdsStorageFailure)
            return true
        }
        if case .userChange(let auth) = operation {
            applyUserChange(auth)
        } else {
            applyWriteAnswer(operation)
        }
        if !remote.recovery.holdsStorageFailure { resumeNetwork() }
        return true
    }

    private func resumeNetwork() {
        guard remote.release(.storageFailure) else { return }
        guard remote.network.online else { return }
        reconnect()
    }
}
