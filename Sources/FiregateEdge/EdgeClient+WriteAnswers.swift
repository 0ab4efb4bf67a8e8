import FiregateBackend
import FiregateModel

/// The backend's answers to sent batches, on the SDK's path: the remote store reads the
/// response (`handleWriteResponse`, the SDK's onMutationResult / handleWriteError), the sync
/// engine applies it with recovery (`executeWithRecovery`), the local store takes it
/// (`applySuccessfulWrite`, `rejectFailedWrite`), and whoever waits is told (`completeWrite`).
extension EdgeClient {
    /// The backend's response to a sent batch: a success acknowledges it, a permanent error
    /// rejects it. False when a transient error leaves it queued (the stream backs off).
    /// `viewsFollow: false` leaves the views to the caller (`viewsFollowAnswers`).
    func handleWriteResponse(_ batch: MutationBatch, _ outcome: Result<CommitResult, FiregateError>, viewsFollow: Bool = true) -> Bool {
        switch outcome {
        case .success(let result):
            remote.writeSucceeded()
            executeWithRecovery(.acknowledge(batch, result), viewsFollow: viewsFollow)
            return true
        case .failure(let error) where error.status.isPermanentWriteError:
            executeWithRecovery(.reject(batch, error), viewsFollow: viewsFollow)
            return true
        case .failure:
            return false
        }
    }

    /// Applies an answer, or — when storing it fails — holds the network down until a retry
    /// stores it (the SDK's executeWithRecovery).
    func executeWithRecovery(_ answer: RecoveryQueue.Operation, viewsFollow: Bool = true) {
        if local.faults.fails(answer.storageOperation) {
            suspendNetwork(retrying: answer)
        } else {
            applyWriteAnswer(answer, viewsFollow: viewsFollow)
        }
    }

    /// Applies an answer to a batch, now or on a recovery retry (the other operations a retry
    /// runs have nothing to apply here).
    func applyWriteAnswer(_ answer: RecoveryQueue.Operation, viewsFollow: Bool = true) {
        switch answer {
        case .acknowledge(let batch, let result): applySuccessfulWrite(batch, result)
        case .reject(let batch, let error): rejectFailedWrite(batch, error)
        case .probe, .userChange: return
        }
        if viewsFollow { viewsFollowAnswers() }
    }

    /// After answers were applied: every view shows them, and eager collection runs.
    func viewsFollowAnswers() {
        updateViews()
        collectEagerGarbage()
    }

    /// syncEngineApplySuccessfulWrite: the local store keeps the batch's committed versions
    /// until the watch confirms them, and whoever waits on it is told.
    func applySuccessfulWrite(_ batch: MutationBatch, _ result: CommitResult) {
        guard local.acknowledgeBatch(batch, result, database: settings.databaseID) else { return }
        completeWrite(batch.id, .acknowledged(result))
    }

    /// syncEngineRejectFailedWrite: the local store drops the batch (the local view reverts).
    func rejectFailedWrite(_ batch: MutationBatch, _ error: FiregateError) {
        guard local.rejectBatch(batch) else { return }
        completeWrite(batch.id, .rejected(error))
    }

    /// Records a batch's final state (answered, or lost with a restart) and wakes whoever
    /// waits on it: its acknowledgement's waiters, `waitForPendingWrites` callers the queue
    /// drained for, the other tabs, the operations log and the timeline.
    func completeWrite(_ batchID: Int64, _ state: WriteState) {
        let (acks, drained) = writeCallbacks.settle(batchID, state, lowestQueued: local.mutationQueue.first?.id)
        broadcast(TabCoordinator.batchNotification(batchID, state))
        switch state {
        case .acknowledged(let result):
            backend.operations.record(.writeAcknowledged(client: id, writeID: String(batchID)))
            timeline.writeAcknowledged(String(batchID), commitTime: result.commitTime)
        case .rejected(let error):
            let decision = error.status == .permissionDenied ? backend.rules.decisions.latestRefusal(client: id) : nil
            backend.operations.record(.writeRejected(client: id, writeID: String(batchID), error: error, decision: decision))
            timeline.writeRejected(String(batchID), error: error, decision: decision)
        case .pending: break
        }
        for waiter in acks { waiter.resume(returning: state) }
        for waiter in drained { waiter.resume(returning: true) }
    }
}
