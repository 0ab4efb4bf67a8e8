import FiregateBackend
import FiregateModel

/// Injected persistence failures (`PUT /clients/{id}/faults`, the spec tests' failDatabase) and
/// the SDK's recovery from them: a failed listen or local write is refused at once; a failed
/// acknowledgement, rejection or watch snapshot takes the network down until the operation
/// succeeds on a retry (the `async_queue_retry` timer); a failed user change waits the same way.
extension EdgeClient {
    public func setFaults(_ json: JSON) throws(FiregateError) -> JSON {
        try local.faults.update(json)
        return faultsJSON
    }

    public var faultsJSON: JSON { local.faults.json.withMember("recovering", .int(Int64(recovery.pending.count))) }

    /// The switch is on, no failed operation holds the network down, and (on a shared
    /// persistence) a primary tab owns the streams.
    var canUseNetwork: Bool { network.online && offlineCauses.isEmpty }

    /// Throws the failure of `operation` if it is failing.
    func checkStorage(_ operation: StorageFaults.Operation) throws(FiregateError) {
        if local.faults.fails(operation) { throw StorageFaults.error(operation) }
    }

    /// disableNetworkUntilRecovery (or a user change that failed): watch and writes stop until
    /// `operation` succeeds on a retry; a storage failure also makes the client offline.
    func suspendNetwork(retrying operation: RecoveryQueue.Operation) {
        recovery.enqueue(operation)
        holdNetwork(offline: recovery.holdsStorageFailure)
    }

    private func holdNetwork(offline: Bool) {
        guard offlineCauses.insert(.storageFailure).inserted else { return }
        stopWatch()
        scripted?.suspend(offline: offline && network.online)
        guard offline, network.online else { return }
        for listenerID in events.listeners.keys { events.listeners[listenerID]?.current = false }
        updateViews()
        raiseOnlineState()
    }

    /// The `async_queue_retry` timer: the oldest waiting operation runs if its storage works
    /// again; the network comes back once no failed storage operation waits.
    func retryRecovery() -> Bool {
        guard !recovery.isEmpty else { return false }
        guard let operation = recovery.takeRunnable(local.faults) else {
            // Still failing: the attempt itself takes the network down again.
            holdNetwork(offline: recovery.holdsStorageFailure)
            return true
        }
        if case .userChange(let auth) = operation {
            applyUserChange(auth)
        } else {
            apply(operation)
        }
        if !recovery.holdsStorageFailure { resumeNetwork() }
        return true
    }

    private func resumeNetwork() {
        guard offlineCauses.remove(.storageFailure) != nil else { return }
        guard network.online else { return }
        reconnect()
    }
}
