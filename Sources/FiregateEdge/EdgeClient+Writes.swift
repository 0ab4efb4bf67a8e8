import FiregateBackend
import FiregateModel
import FiregateStore
import Foundation

/// The write side: queueing user writes with latency compensation, the pipeline that sends
/// them in order, acknowledgements, rejections and the write gate.
extension EdgeClient {
    /// Queues a user write (one batch), applies it locally at once and returns its id. From a
    /// `tab` signed in as another user than the primary's, it joins that user's queue, sent
    /// once a primary of that user is.
    public func write(_ writes: [Write], tab: String? = nil) async throws(FiregateError) -> MutationBatch {
        try beginDataCall()
        guard !writes.isEmpty else { throw .invalidArgument("A write needs at least one operation.") }
        guard writes.count <= DocumentLimits.maxWritesPerCommit else { throw .invalidArgument("A maximum of 500 writes allowed per request.") }
        for write in writes where write.path.isEmpty || !write.path.isDocument {
            throw .invalidArgument("Invalid document path \"\(write.path)\".")
        }
        try checkStorage(.locallyWriteMutations)
        let user = user(of: tab)
        let batch = local.queueWrite(writes, localWriteTime: now(), user: user, currentUser: currentUser)
        writeCallbacks.pending(batch.id)
        if local.persistent {
            let json = JSON.array(writes.map { $0.json(database: settings.databaseID) })
            do {
                // Queued while this actor still runs (the body of the continuation runs at once):
                // the pump may send the batch during the wait, and its commit must not remove
                // the batch from the disk before the batch is saved there.
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    local.saveMutation(batch, writes: json, uid: user) { continuation.resume(with: $0) }
                }
            } catch {
                _ = local.removeBatch(batch.id)
                writeCallbacks.forget(batch.id)
                throw .internal("The write could not be persisted: \(error)")
            }
        }
        timeline.writeQueued(String(batch.id), documents: writes.map(\.path.description))
        broadcast(TabCoordinator.batchNotification(batch.id, .pending))
        updateViews()
        pumpWrites()
        return batch
    }

    public func writeState(_ batchID: Int64) -> WriteState? { writeCallbacks[batchID] }

    /// Waits until the batch is acknowledged or rejected; `.pending` when `timeoutMs` passes first.
    public func waitForAck(_ batchID: Int64, timeoutMs: Int? = nil) async -> WriteState {
        if let state = writeCallbacks[batchID], state != .pending { return state }
        let waiterID = writeCallbacks.nextID()
        // Ended once the answer comes, and weak meanwhile: neither the timer nor the client it
        // would expire outlives the wait (clients made and deleted by the thousand).
        let timer = timeoutMs.map { timeoutMs in
            Task { [weak self] in
                try? await Task.sleep(for: .milliseconds(timeoutMs))
                await self?.expireAckWaiter(batchID, waiterID)
            }
        }
        let state = await withCheckedContinuation { continuation in
            writeCallbacks.waitForAck(batchID, (waiterID, continuation))
        }
        timer?.cancel()
        return state
    }

    func expireAckWaiter(_ batchID: Int64, _ waiterID: Int) {
        writeCallbacks.expireAckWaiter(batchID, waiterID)?.resume(returning: .pending)
    }

    public var pendingWrites: [MutationBatch] { local.mutationQueue.batches }

    /// Starts the pipeline unless it runs already or may not send (offline, gate, terminated).
    func pumpWrites() {
        guard remote.canUseNetwork, !remote.gates.holdWrites, !terminated, !writesPaused, !local.mutationQueue.isEmpty,
              remote.writePipeline.startSending() else { return }
        Task { await self.sendQueuedWrites() }
    }

    /// Sends batches oldest first while allowed, pipelined as the SDK's write stream does: up
    /// to `maxPendingWrites` are applied on the backend in order and made durable together,
    /// then acknowledged in order. A transient failure leaves that batch and the ones after it
    /// queued for the retry.
    func sendQueuedWrites() async {
        defer { remote.writePipeline.stopSending() }
        while remote.canUseNetwork, !remote.gates.holdWrites, !terminated, !writesPaused {
            let batches = remote.writePipeline.takeRound(from: local.mutationQueue.batches)
            guard !batches.isEmpty else { return }
            defer { remote.writePipeline.answered(batches.map(\.id)) }
            if remote.network.latencyMs > 0 { try? await Task.sleep(for: .milliseconds(remote.network.latencyMs)) }
            if backend.replicas != nil, await sendToOwner(batches) { continue }
            var begun: [(MutationBatch, Result<DocumentDatabase.PendingCommit, FiregateError>)] = []
            for batch in batches {
                // A batch may have been settled while this round waited.
                guard local.mutationQueue.batches.contains(where: { $0.id == batch.id }) else { continue }
                let started = beginCommit(batch)
                begun.append((batch, started))
                if case .failure(let error) = started, !error.status.isPermanentWriteError { break }
            }
            // The answers of one round arrive together: the views are updated once for all
            // of them (an acknowledgement alone rarely changes what a view shows).
            var settled = false
            defer { if settled { viewsFollowAnswers() } }
            for (batch, started) in begun {
                guard settle(batch, await EdgeClient.outcome(of: started), viewsFollow: false) else {
                    scheduleRetry()
                    return
                }
                settled = true
            }
        }
    }

    /// On replicas: when another replica owns the database, the round's batches go there one
    /// by one, each leaving the queue once answered; false when this replica owns it (or may
    /// take it): the round is committed here. A transient failure schedules the retry.
    private func sendToOwner(_ batches: [MutationBatch]) async -> Bool {
        let database = settings.databaseID
        guard let replicas = backend.replicas,
              !replicas.holdsLease(of: .documents(project: database.project, database: database.database)) else { return false }
        for batch in batches {
            guard local.mutationQueue.batches.contains(where: { $0.id == batch.id }) else { continue }
            timeline.writeSent(String(batch.id))
            if let rejection = remote.network.takeInjectedRejection() {
                guard settle(batch, .failure(rejection)) else { scheduleRetry(); return true }
                continue
            }
            let outcome: Result<CommitResult, FiregateError>
            do {
                let receipt = QueuedWriteReceipt(client: id, kind: .batch, id: batch.id, stamp: batch.localWriteTime.microseconds)
                guard let result = try await backend.remoteCommits.commit(batch.writes, in: database, as: rulesIdentity, receipt: receipt) else { return false }
                local.mutationRemoval(batch.id)?.enqueueAlone()
                outcome = .success(result)
            } catch {
                outcome = .failure(error)
            }
            guard settle(batch, outcome) else { scheduleRetry(); return true }
        }
        return true
    }

    /// Applies one batch on the backend now (or fails it by the injected network condition).
    private func beginCommit(_ batch: MutationBatch) -> Result<DocumentDatabase.PendingCommit, FiregateError> {
        timeline.writeSent(String(batch.id))
        if let rejection = remote.network.takeInjectedRejection() { return .failure(rejection) }
        do {
            // The batch leaves the on-disk queue in the commit's own transaction.
            // Judged with the identity the client has as it sends the batch.
            let judge = backend.rules.documentJudge(settings.databaseID, caller: RulesCaller(identity: rulesIdentity, surface: "edge", client: id))
            return .success(try database.beginCommit(batch.writes, companion: local.mutationRemoval(batch.id), judge: judge))
        } catch {
            return .failure(error)
        }
    }

    /// Applies the backend's answer to a sent batch; false when a transient error leaves it
    /// queued.
    private func settle(_ batch: MutationBatch, _ outcome: Result<CommitResult, FiregateError>, viewsFollow: Bool = true) -> Bool {
        switch outcome {
        case .success(let result):
            remote.writePipeline.succeeded()
            settle(.acknowledge(batch, result), viewsFollow: viewsFollow)
            return true
        case .failure(let error) where error.status.isPermanentWriteError:
            settle(.reject(batch, error), viewsFollow: viewsFollow)
            return true
        case .failure:
            return false
        }
    }

    /// Sends one batch to the backend and applies the outcome; false when a transient error
    /// leaves it queued.
    @discardableResult
    func send(_ batch: MutationBatch) async -> Bool {
        guard remote.writePipeline.take(batch.id) else {
            // Another sender has it: wait for that outcome instead of committing it twice.
            return await waitForAck(batch.id) != .pending
        }
        defer { remote.writePipeline.answered([batch.id]) }
        if remote.network.latencyMs > 0 { try? await Task.sleep(for: .milliseconds(remote.network.latencyMs)) }
        // The batch may have been settled while this call waited.
        guard local.mutationQueue.batches.contains(where: { $0.id == batch.id }) else { return true }
        if backend.replicas != nil, await sendToOwner([batch]) {
            return !local.mutationQueue.batches.contains(where: { $0.id == batch.id })
        }
        return settle(batch, await EdgeClient.outcome(of: beginCommit(batch)))
    }

    /// A begun commit's answer once it is durable.
    private static func outcome(of started: Result<DocumentDatabase.PendingCommit, FiregateError>) async -> Result<CommitResult, FiregateError> {
        switch started {
        case .success(let pending):
            do {
                return .success(try await pending.durable())
            } catch {
                return .failure(error)
            }
        case .failure(let error):
            return .failure(error)
        }
    }

    /// Backoff as the SDK's: 1 s, ×1.5, at most 60 s.
    func scheduleRetry() {
        let delay = remote.writePipeline.backOff()
        Task {
            try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
            await self.pumpWrites()
        }
    }

    /// Applies the server's answer, or — when storing it fails — holds the network down until a
    /// retry stores it (executeWithRecovery).
    /// `viewsFollow: false` leaves the views to the caller (`viewsFollowAnswers`).
    func settle(_ answer: RecoveryQueue.Operation, viewsFollow: Bool = true) {
        if local.faults.fails(answer.storageOperation) {
            suspendNetwork(retrying: answer)
        } else {
            apply(answer, viewsFollow: viewsFollow)
        }
    }

    /// Applies a server answer to a batch (the other operations have nothing to apply here).
    func apply(_ answer: RecoveryQueue.Operation, viewsFollow: Bool = true) {
        switch answer {
        case .acknowledge(let batch, let result): acknowledge(batch, result)
        case .reject(let batch, let error): reject(batch, error)
        case .probe, .userChange: return
        }
        if viewsFollow { viewsFollowAnswers() }
    }

    /// After answers were applied: every view shows them, and eager collection runs.
    func viewsFollowAnswers() {
        updateViews()
        collectEagerGarbage()
    }

    /// The server committed the batch: the local store keeps its committed versions until the
    /// watch confirms them, and whoever waits on it is told.
    func acknowledge(_ batch: MutationBatch, _ result: CommitResult) {
        guard local.acknowledgeBatch(batch, result, database: settings.databaseID) else { return }
        finish(batch.id, .acknowledged(result))
    }

    /// The server refused the batch for good: the local store drops it (the local view reverts).
    func reject(_ batch: MutationBatch, _ error: FiregateError) {
        guard local.rejectBatch(batch) else { return }
        finish(batch.id, .rejected(error))
    }

    /// Records a batch's final state and wakes whoever waits on it.
    func finish(_ batchID: Int64, _ state: WriteState) {
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

    /// waitForPendingWrites: true once every batch queued before the call is settled, false
    /// when `timeoutMs` passes first. Never completes while offline, as in the SDK.
    public func waitForPendingWrites(timeoutMs: Int) async throws(FiregateError) -> Bool {
        try beginDataCall()
        guard let upTo = local.mutationQueue.highestID else { return true }
        let waiterID = writeCallbacks.nextID()
        let timer = Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(timeoutMs))
            await self?.expireWaiter(waiterID)
        }
        let settled = await withCheckedContinuation { continuation in
            writeCallbacks.waitForPendingWrites((waiterID, upTo, continuation))
        }
        timer.cancel()
        return settled
    }

    func expireWaiter(_ waiterID: Int) {
        writeCallbacks.expirePendingWaiter(waiterID)?.resume(returning: false)
    }

    /// `gates:releaseWrite {"count":n}`: commit and acknowledge the oldest `n` queued batches.
    public func releaseWrites(count: Int) async throws(FiregateError) -> [(Int64, WriteState)] {
        guard remote.canUseNetwork else {
            throw .clientState("The client is offline: enable its network before releasing writes.")
        }
        var released: [(Int64, WriteState)] = []
        for _ in 0..<max(count, 0) {
            guard remote.canUseNetwork, let batch = local.mutationQueue.first else { break }
            await send(batch)
            released.append((batch.id, writeCallbacks[batch.id] ?? .pending))
        }
        return released
    }

    /// `gates:releaseWrite {"fail":status}`: the oldest batch fails with `status`; a permanent
    /// status rejects it, a transient one leaves it queued for retry.
    public func failWrite(_ status: Status) throws(FiregateError) -> (Int64, WriteState)? {
        guard let batch = local.mutationQueue.first else { return nil }
        if status.isPermanentWriteError {
            settle(.reject(batch, FiregateError(status, "The write was rejected by the test harness (\(status.rawValue)).")))
        }
        return (batch.id, writeCallbacks[batch.id] ?? .pending)
    }
}
