import FiregateBackend
import FiregateModel
import FiregateStore

/// What the client's documents and tree sides share: the signed-in user, activity for the
/// heartbeat timeout, and the gates a test releases on both.
extension EdgeClient {
    var writesPaused: Bool {
        auth?.isExpired(nowMillis: backend.clock.nowMicros() / 1000 + settings.clockOffsetMs) ?? false
    }

    public var authJSON: JSON {
        guard let auth else { return ["uid": .null, "writesPaused": false] }
        return auth.json.withMember("writesPaused", .bool(writesPaused))
    }

    /// Who the client is to the server's security rules: its token as the emulators read it
    /// (the admin's credential is the admin, `AdminCredential`; a JWT names its user), else the
    /// signed-in uid as a token with `sub` and `user_id`; signed out is unauthenticated.
    public var rulesIdentity: CallIdentity {
        guard let auth else { return .unauthenticated }
        if backend.rules.admin.isAdmin(auth.token) { return .admin }
        guard let uid = auth.uid else { return .unauthenticated }
        var (user, claims): (String, JSON) = (uid, ["sub": .string(uid), "user_id": .string(uid)])
        if let token = auth.token, case .user(let named, let payload) = CallIdentity(userToken: token) { (user, claims) = (named, payload) }
        if case .object(let extra)? = auth.claims {
            for (key, value) in extra { claims = claims.withMember(key, value) }
        }
        return .user(uid: user, claims: claims)
    }

    /// The signed-in user's uid; "" when signed out.
    var currentUser: String { auth?.uid ?? "" }

    /// PUT /clients/{id}/auth: a new user or token (writes paused by an expired token resume).
    /// Another uid switches the documents' mutation queue, as the SDK's user change does.
    public func setAuth(_ json: JSON) async throws(FiregateError) -> JSON {
        let next = try ClientAuth.parse(json)
        if remote.recovery.hasUserChange || ((next?.uid ?? "") != currentUser && local.faults.fails(.handleUserChange)) {
            // The user change cannot be stored (or waits behind one that could not): the
            // network stays down until a retry applies it, in order.
            suspendNetwork(retrying: .userChange(next))
        } else {
            applyUserChange(next)
            remote.restartForCredentialChange()
        }
        await updateTreeLink()
        pumpWrites()
        return authJSON
    }

    /// The user (or token) becomes `next`; another uid switches the mutation queue.
    func applyUserChange(_ next: ClientAuth?) {
        let previousUser = currentUser
        auth = next
        if currentUser != previousUser { switchMutationQueue(from: previousUser) }
        if settings.persistence == .persistent { TreeCacheStorage(store: backend.edgeStore, clientID: id).saveAuth(auth?.json) }
    }

    /// The user changed: the old user's pending writes stop being visible and being sent; the
    /// new user's (kept from an earlier sign-in) come back. `waitForPendingWrites` calls end.
    func switchMutationQueue(from previousUser: String) {
        local.switchUser(from: previousUser, to: currentUser)
        for waiter in writeCallbacks.endPendingWaiters() { waiter.resume(returning: false) }
        updateViews()
        backend.operations.record(.client(client: id, action: "userChanged"))
    }

    /// A request or stream from the client: it is alive; a connection dropped by the
    /// heartbeat timeout reconnects.
    public func noteActivity() async {
        if heartbeat.noteActivity(at: backend.clock.nowMicros()) { await updateTreeLink() }
        if let treeSync, await treeSync.writesPausedChanged(writesPaused) { await updateTreeLink() }
        startHeartbeatIfNeeded()
    }

    /// A stream of the client's ended: an open stream is activity until it closes, so the
    /// heartbeat's silence counts from now (docs/edge-clients.md, `heartbeatTimeoutMs`).
    public func noteStreamClosed() {
        heartbeat.noteStreamClosed(at: backend.clock.nowMicros())
    }

    private func startHeartbeatIfNeeded() {
        guard heartbeat.task == nil, !heartbeat.dropped, let timeout = settings.heartbeatTimeoutMs, timeout > 0 else { return }
        let clock = backend.clock
        heartbeat.started(Task { [weak self] in
            while !Task.isCancelled {
                guard let deadline = await self?.heartbeatDeadline() else { return }
                await clock.sleep(untilMicros: deadline)
                // Ends once the connection dropped; the next call from the app starts it again.
                guard !Task.isCancelled, await self?.checkHeartbeat() == true else { return }
            }
        })
    }

    private func heartbeatDeadline() -> Int64? {
        heartbeat.deadline(timeoutMs: settings.heartbeatTimeoutMs)
    }

    /// Drops the connection if the client was silent past its timeout; false once dropped.
    private func checkHeartbeat() async -> Bool {
        guard let deadline = heartbeatDeadline() else { return false }
        guard backend.clock.nowMicros() >= deadline else { return true }
        guard queries.states.isEmpty, await (treeSync?.listenerCount ?? 0) == 0 else {
            _ = heartbeat.noteActivity(at: backend.clock.nowMicros())  // an open stream counts as activity
            return true
        }
        heartbeat.drop()
        await updateTreeLink()
        return false
    }

    /// The queued tree writes (none for a client that never used the tree).
    public func treePendingWrites() async -> [JSON] { await treeSync?.pendingWritesJSON() ?? [] }

    public func treeWriteState(_ id: Int64) async -> TreeWriteState? { await treeSync?.writeState(id) }

    /// `:collectGarbage` for the tree cache.
    public func pruneTree() async -> JSON {
        await treeSync?.pruneNow()
            ?? ["queriesPruned": 0, "bytesBefore": 0, "bytesAfter": 0, "cacheSizeBytes": .int(settings.treeCacheSizeBytes)]
    }

    /// `gates:releaseWatch` on both sides.
    public func releaseWatchGate() async {
        releaseWatch()
        await treeSync?.releaseHeldWatch()
    }

    /// `gates:sync` on both sides.
    public func syncAll(token: String) async {
        await sync(token: token)
        await treeSync?.sync(token: token)
    }

    /// `gates:releaseWrite`: the oldest document batches first, then tree writes.
    public func releaseAnyWrites(count: Int) async throws(FiregateError) -> [JSON] {
        var released: [JSON] = []
        if !local.mutationQueue.isEmpty {
            for (writeID, state) in try await releaseWrites(count: count) { released.append(EdgeClient.render(writeID, state)) }
        }
        let remaining = count - released.count
        if remaining > 0 {
            guard remote.canUseNetwork else { throw .clientState("The client is offline: enable its network before releasing writes.") }
            for (writeID, state) in await treeSync?.releaseWrites(count: remaining) ?? [] { released.append(EdgeClient.render(treeWrite: writeID, state)) }
        }
        return released
    }

    /// `gates:releaseWrite {"fail"}`: the oldest document batch, else the oldest tree write.
    public func failAnyWrite(_ status: Status) async throws(FiregateError) -> JSON? {
        if !local.mutationQueue.isEmpty, let (writeID, state) = try failWrite(status) { return EdgeClient.render(writeID, state) }
        if let (writeID, state) = await treeSync?.failWrite(status) { return EdgeClient.render(treeWrite: writeID, state) }
        return nil
    }

    public static func render(_ id: Int64, _ state: WriteState) -> JSON {
        var json: JSON = ["id": .string(String(id)), "state": .string(state.name)]
        switch state {
        case .acknowledged(let result): json = json.withMember("commitTime", .string(result.commitTime.rfc3339))
        case .rejected(let error): json = json.withMember("error", JSON.errorBody(error)["error"]!)
        case .pending: break
        }
        return json
    }

    public static func render(treeWrite id: Int64, _ state: TreeWriteState) -> JSON {
        var json: JSON = ["id": .string("t\(id)"), "state": .string(state.name)]
        switch state {
        case .acknowledged(let answer): json = json.withMember("result", answer)
        case .rejected(let error): json = json.withMember("error", JSON.errorBody(error)["error"]!)
        case .pending: break
        }
        return json
    }
}
