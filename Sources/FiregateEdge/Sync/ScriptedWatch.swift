import FiregateModel

/// A watch stream driven by the test instead of the backend (docs/edge-clients.md, scripted watch): the
/// SDK's remote store for listens (remote/remote_store.ts). It keeps the listened targets, the
/// stream's state and its aggregator, counts the requests each target awaits an answer to, and
/// tracks the online state as the SDK's OnlineStateTracker does: a message makes it online, a
/// failed stream makes it unknown (was online) or offline (was not).
struct ScriptedWatch {
    enum StreamState: Equatable {
        /// No stream: offline, or nothing to listen to yet.
        case closed
        /// Failed; reopens when the backoff elapses (`reconnect`) or the network comes back.
        case awaitingBackoff
        case open
    }

    /// What a message asks the client to do.
    enum Outcome {
        case none
        case remoteEvent(RemoteEvent)
        /// Watch refused these targets (`REMOVE` with a cause): their listens fail.
        case rejected([WatchTarget], FiregateError)
        /// The stream failed; `offline`: the online state became offline.
        case streamFailed(offline: Bool)
    }

    private(set) var targets: [Int: WatchTarget] = [:]
    private(set) var stream = StreamState.closed
    private var aggregator = WatchChangeAggregator()
    /// Whether the last stream failure left the client offline (OnlineState.Offline).
    private(set) var offline = false
    /// A stream opened with no failure since the last message: its online-state timer runs.
    private(set) var onlineTimerPending = false
    private var wasOnline = false
    /// Listen and unlisten requests sent, for the state (the spec's watchStreamRequestCount).
    private(set) var requestCount = 0
    /// What the open stream has asked watch for: each target's last listen request, with the
    /// resume token (or, without one, the read time) and purpose it carried (a re-listen after
    /// an existence-filter mismatch says so; `targets` keeps the plain purpose for later reconnects).
    private(set) var requests: [Int: (resumeToken: String, readTime: Timestamp, purpose: TargetPurpose)] = [:]

    /// remoteStoreListen: the target is listened to from now on; an open stream asks for it.
    mutating func listen(_ target: WatchTarget, networkOn: Bool) {
        guard targets[target.id] == nil else { return }
        targets[target.id] = target
        if stream == .open {
            sendWatchRequest(target.id)
        } else if networkOn {
            // A stream awaiting its backoff opens now too: the listen would wait for it anyway.
            openStream()
        }
    }

    /// remoteStoreUnlisten: an open stream sends the unlisten; watch's REMOVE answers it.
    mutating func unlisten(_ targetID: Int) {
        guard targets.removeValue(forKey: targetID) != nil else { return }
        if stream == .open {
            sendUnwatchRequest(targetID)
        } else if targets.isEmpty {
            // No stream and nothing left to listen to: the online state is unknown again.
            offline = false
            wasOnline = false
        }
    }

    /// The device's network switch: off closes the stream (offline), on opens it again.
    mutating func networkChanged(online: Bool) {
        if online {
            offline = false
            if stream != .open, !targets.isEmpty { openStream() }
        } else {
            stream = .closed
            requests.removeAll()
            offline = true
            wasOnline = false
            onlineTimerPending = false
        }
    }

    /// A target dropped with the stream it was on (a new primary tab's stream never asks for
    /// it): no unlisten is sent.
    mutating func forget(_ targetID: Int) {
        targets[targetID] = nil
        requests[targetID] = nil
    }

    /// A new primary tab's stream asks with the resume token it finds stored.
    mutating func setResumeToken(_ targetID: Int, _ token: String, snapshotVersion: Timestamp) {
        targets[targetID]?.resumeToken = token
        targets[targetID]?.snapshotVersion = snapshotVersion
    }

    /// A refused target is listened to again after all (its rejection could not be stored).
    mutating func restore(_ target: WatchTarget) {
        targets[target.id] = target
    }

    /// The network is held down by a failed storage operation (`offline`) or a user change
    /// that could not be applied yet (the state is unknown then).
    mutating func suspend(offline: Bool) {
        stream = .closed
        requests.removeAll()
        onlineTimerPending = false
        self.offline = offline
        wasOnline = false
    }

    /// A user change (or token refresh) restarts the stream: closed, state unknown, then
    /// open again for every target (remoteStoreHandleCredentialChange).
    mutating func restartForCredentialChange(networkOn: Bool) {
        guard networkOn else { return }
        stream = .closed
        requests.removeAll()
        offline = false
        wasOnline = false
        if !targets.isEmpty { openStream() }
    }

    /// The online-state timer ran out before any message: the client is offline. True when
    /// that changed the state.
    mutating func onlineStateTimeout() -> Bool {
        guard onlineTimerPending else { return false }
        onlineTimerPending = false
        offline = true
        return true
    }

    /// The idle timer: an open stream with nothing to listen to closes (not a failure).
    mutating func closeIfIdle() -> Bool {
        guard stream == .open, targets.isEmpty else { return false }
        stream = .closed
        requests.removeAll()
        onlineTimerPending = false
        return true
    }

    /// The backoff timer elapsed: a failed stream opens again.
    mutating func reconnect(networkOn: Bool) -> Bool {
        guard stream == .awaitingBackoff, networkOn else { return false }
        openStream()
        return true
    }

    private mutating func openStream() {
        stream = .open
        // OnlineStateTracker.handleWatchStreamStart: without a failure counted, the state is
        // unknown until a message arrives or the timer runs out.
        if !offline { onlineTimerPending = true }
        aggregator = WatchChangeAggregator()
        for id in targets.keys.sorted() { sendWatchRequest(id) }
    }

    private mutating func sendWatchRequest(_ targetID: Int, purpose: TargetPurpose? = nil) {
        guard let target = targets[targetID] else { return }
        aggregator.recordPendingRequest(targetID)
        requestCount += 1
        // As toTarget: a resume token if there is one, else the version the target was read at.
        // A re-listen after a mismatch starts fresh, with neither.
        let token = purpose == nil ? target.resumeToken : ""
        let readTime = purpose == nil && token.isEmpty ? target.snapshotVersion : .zero
        requests[targetID] = (token, readTime, purpose ?? target.purpose)
    }

    private mutating func sendUnwatchRequest(_ targetID: Int) {
        aggregator.recordPendingRequest(targetID)
        requestCount += 1
        requests[targetID] = nil
    }

    /// One message from the script.
    /// `remoteKeys`: what the client holds for a target (its views' synced documents).
    /// `lastSnapshot`: the local store's last remote snapshot version; older ones are ignored.
    mutating func receive(_ message: WatchMessage, remoteKeys: @escaping (Int) -> Set<ResourcePath>, database: DatabaseID,
                          lastSnapshot: Timestamp) throws(FiregateError) -> Outcome {
        guard stream == .open else {
            throw .clientState("The client's watch stream is not open (it is offline, has no listen, or awaits its backoff): nothing can arrive on it.")
        }
        if let id = aggregator.unexpectedResponse(message) {
            throw .clientState("Target \(id) has no listen or unlisten request awaiting an answer: watch cannot acknowledge it.")
        }
        let metadata = WatchTargetView(targets: targets, remoteKeys: remoteKeys, database: database)
        if case .streamClose(let error, let reconnect) = message {
            guard !targets.isEmpty else {
                // Nothing to listen to: the stream stays closed, the state unknown.
                stream = .closed
                requests.removeAll()
                offline = false
                wasOnline = false
                return .streamFailed(offline: false)
            }
            let wentOffline = fail()
            if reconnect || error == nil { openStream() }
            return .streamFailed(offline: wentOffline)
        }
        // Any message means the stream works.
        offline = false
        wasOnline = true
        onlineTimerPending = false
        if case .targetChange(.remove, let ids, let cause?, _, _) = message {
            // A target error is raised at once, not at the next snapshot.
            let refused = ids.compactMap { targets[$0] }
            for target in refused {
                targets[target.id] = nil
                requests[target.id] = nil
                aggregator.removeTarget(target.id)
            }
            return refused.isEmpty ? .none : .rejected(refused, cause)
        }
        aggregator.handle(message, metadata)
        guard case .targetChange(_, let ids, _, _, let readTime?) = message, ids.isEmpty, readTime >= lastSnapshot else { return .none }
        return .remoteEvent(raiseSnapshot(at: readTime, metadata))
    }

    /// OnlineStateTracker.handleWatchStreamFailure; true when the client went offline.
    private mutating func fail() -> Bool {
        stream = .awaitingBackoff
        requests.removeAll()
        onlineTimerPending = false
        if wasOnline {
            wasOnline = false
            return false
        }
        let changed = !offline
        offline = true
        return changed
    }

    private mutating func raiseSnapshot(at version: Timestamp, _ metadata: WatchTargetView) -> RemoteEvent {
        let event = aggregator.createRemoteEvent(at: version, metadata)
        for (id, change) in event.targetChanges where !change.resumeToken.isEmpty {
            targets[id]?.resumeToken = change.resumeToken
            targets[id]?.snapshotVersion = version
        }
        for (id, purpose) in event.targetMismatches.sorted(by: { $0.key < $1.key }) where targets[id] != nil {
            // A hard reset: unlisten and listen again without a resume token, for a full result.
            targets[id]?.resumeToken = ""
            sendUnwatchRequest(id)
            sendWatchRequest(id, purpose: purpose)
        }
        return event
    }
}
