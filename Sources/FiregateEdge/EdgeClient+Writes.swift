import FiregateBackend
import FiregateModel
import FiregateStore
import Foundation

/// The write side: queueing user writes with latency compensation, the pipeline that sends
/// them in order, and the write gate. The answers are applied in `EdgeClient+WriteAnswers`.
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
              remote.startSending() else { return }
        Task { await self.sendQueuedWrites() }
    }

    /// Sends batches oldest first while allowed, pipelined as the SDK's write stream does: up
    /// to `maxPendingWrites` a round. A transient failure leaves that batch and the ones after
    /// it queued for the retry.
    func sendQueuedWrites() async {
        defer { remote.stopSending() }
        while remote.canUseNetwork, !remote.gates.holdWrites, !terminated, !writesPaused {
            let batches = remote.takeRound(from: local.mutationQueue.batches)
            guard !batches.isEmpty else { return }
            defer { remote.writesAnswered(batches.map(\.id)) }
            guard await commit(batches) else {
                scheduleRetry()
                return
            }
        }
    }

    /// Sends one batch to the backend and applies the outcome (`gates:releaseWrite`); false
    /// when a transient error leaves it queued.
    @discardableResult
    func send(_ batch: MutationBatch) async -> Bool {
        guard remote.takeWrite(batch.id) else {
            // Another sender has it: wait for that outcome instead of committing it twice.
            return await waitForAck(batch.id) != .pending
        }
        defer { remote.writesAnswered([batch.id]) }
        return await commit([batch])
    }

    /// The one way batches reach the backend, for both senders: after the network's latency,
    /// the batches still queued are committed in order — here, made durable together and
    /// answered in order, or on the replica that owns the database one by one — and each
    /// answer is applied. False when a transient failure leaves a batch (and those after it)
    /// queued.
    private func commit(_ batches: [MutationBatch]) async -> Bool {
        if remote.network.latencyMs > 0 { try? await Task.sleep(for: .milliseconds(remote.network.latencyMs)) }
        // A batch may have been answered while this round waited.
        let queued = batches.filter { local.isQueued($0.id) }
        guard !queued.isEmpty else { return true }
        if backend.replicas != nil, let answered = await sendToOwner(queued) { return answered }
        var begun: [(MutationBatch, Result<DocumentDatabase.PendingCommit, FiregateError>)] = []
        for batch in queued where local.isQueued(batch.id) {
            let started = beginCommit(batch)
            begun.append((batch, started))
            if case .failure(let error) = started, !error.status.isPermanentWriteError { break }
        }
        // The answers of one round arrive together: the views are updated once for all of
        // them (an acknowledgement alone rarely changes what a view shows).
        var answered = false
        defer { if answered { viewsFollowAnswers() } }
        for (batch, started) in begun {
            guard handleWriteResponse(batch, await EdgeClient.outcome(of: started), viewsFollow: false) else { return false }
            answered = true
        }
        return true
    }

    /// On replicas: when another replica owns the database, the batches go there one by one,
    /// each leaving the queue once answered. Nil when this replica owns it (or may take it):
    /// they are committed here. False when a transient failure leaves a batch queued.
    private func sendToOwner(_ batches: [MutationBatch]) async -> Bool? {
        let database = settings.databaseID
        guard let replicas = backend.replicas,
              !replicas.holdsLease(of: .documents(project: database.project, database: database.database)) else { return nil }
        for batch in batches where local.isQueued(batch.id) {
            timeline.writeSent(String(batch.id))
            if let rejection = remote.takeInjectedRejection() {
                guard handleWriteResponse(batch, .failure(rejection)) else { return false }
                continue
            }
            let outcome: Result<CommitResult, FiregateError>
            do {
                let receipt = QueuedWriteReceipt(client: id, kind: .batch, id: batch.id, stamp: batch.localWriteTime.microseconds)
                guard let result = try await backend.remoteCommits.commit(batch.writes, in: database, as: rulesIdentity, receipt: receipt) else { return nil }
                local.mutationRemoval(batch.id)?.enqueueAlone()
                outcome = .success(result)
            } catch {
                outcome = .failure(error)
            }
            guard handleWriteResponse(batch, outcome) else { return false }
        }
        return true
    }

    /// Applies one batch on the backend now (or fails it by the injected network condition).
    private func beginCommit(_ batch: MutationBatch) -> Result<DocumentDatabase.PendingCommit, FiregateError> {
        timeline.writeSent(String(batch.id))
        if let rejection = remote.takeInjectedRejection() { return .failure(rejection) }
        do {
            // The batch leaves the on-disk queue in the commit's own transaction.
            // Judged with the identity the client has as it sends the batch.
            let judge = backend.rules.documentJudge(settings.databaseID, caller: RulesCaller(identity: rulesIdentity, surface: "edge", client: id))
            return .success(try database.beginCommit(batch.writes, companion: local.mutationRemoval(batch.id), judge: judge))
        } catch {
            return .failure(error)
        }
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
        let delay = remote.backOffWrites()
        Task {
            try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
            await self.pumpWrites()
        }
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
            executeWithRecovery(.reject(batch, FiregateError(status, "The write was rejected by the test harness (\(status.rawValue)).")))
        }
        return (batch.id, writeCallbacks[batch.id] ?? .pending)
    }
}
