import FiregateModel

/// The engine's side of a shared web persistence (`SharedPersistence`): it applies the tabs'
/// decisions, keeps each tab's user and frozen views, and knows which queries came from a
/// secondary tab.
extension EdgeClient {
    /// Applies `decision` if it is newer than the last one, in one step: the primary's faults
    /// and sync-engine term, frozen views, the primary's user and network, paused or reopened
    /// streams. Returns the watch state before it changed (what a tab that just lost the lease
    /// believes it still has), or nil for an outdated decision.
    func applyTabDecision(_ decision: TabDecision) async -> JSON? {
        let previous = tabs.context.primary
        let streamBefore = scriptedWatchJSON
        guard tabs.context.apply(decision) else { return nil }
        if decision.primary != previous {
            timeline.record(.tab, [("action", .string("primary")), ("tab", decision.primary.map(JSON.string) ?? .null)])
            local.setFaults(decision.primary.flatMap { decision.faults[$0] } ?? StorageFaults())
            beginPrimaryTerm(of: decision.primary, after: previous)
        }
        for tab in Set(tabs.context.users.keys).union(tabs.context.frozen).union(decision.frozenTabs) {
            setViewsFrozen(ownedBy: tab, decision.frozenTabs.contains(tab))
        }
        guard decision.primary != nil else {
            setRemotePaused(true)
            return streamBefore
        }
        let primaryAuth = decision.primaryAuth.flatMap { try? ClientAuth.parse($0) }
        if (primaryAuth?.uid ?? "") != currentUser {
            // The connection sends the new primary's user's writes (a user change).
            applyUserChange(primaryAuth)
        }
        if decision.primaryNetworkEnabled != remote.network.online {
            remote.setOnline(decision.primaryNetworkEnabled)
            if remote.network.online { goOnline() } else { goOffline() }
        }
        setRemotePaused(false)
        if previous != nil, decision.primary != previous, remote.network.online {
            // The lease passed straight to another tab: it opens its own stream.
            remote.restartForCredentialChange()
        }
        await updateTreeLink()
        return streamBefore
    }

    /// The faults a tab's transactions have now (the primary's are the engine's own `faults`).
    func setFaults(_ faults: StorageFaults, ofTab tab: String) {
        tabs.context.setFaults(faults, ofTab: tab)
        if tab == tabs.context.primary { local.setFaults(faults) }
    }

    /// Another tab (or none) acts for the persistence now. Its sync engine starts without
    /// limbo lookups (the old primary's went with its stream), with its own lookup id
    /// generator; its views find their limbo documents again once watch says their target is
    /// current; its targets carry the resume tokens stored, not the old primary's newer
    /// unsaved ones.
    private func beginPrimaryTerm(of primary: String?, after previous: String?) {
        for targetID in queries.limbo.activeByTarget.keys { remote.forget(targetID) }
        let nextTargetID = tabs.context.beginTerm(of: primary, after: previous, oldNextTargetID: queries.limbo.nextTargetID)
        queries.resetLimbo(maxConcurrent: remote.gates.maxConcurrentLimboResolutions, nextTargetID: nextTargetID)
        local.revertTargetsToSaved()
        for target in local.targetCache.targets.values {
            remote.setResumeToken(target.targetID, target.resumeToken, snapshotVersion: target.snapshotVersion)
        }
    }

    /// An imported shared persistence waits for a tab to hold the lease.
    func pauseUntilPrimary() { setRemotePaused(true) }

    /// No tab holds the lease (`paused`): the streams close without a word to the listeners,
    /// whose online state is the last primary's; the next primary opens them again.
    private func setRemotePaused(_ paused: Bool) {
        guard paused ? remote.hold(.noPrimaryTab) : remote.release(.noPrimaryTab) else { return }
        if paused {
            stopWatch()
            remote.suspendScripted(offline: false)
        } else if remote.canUseNetwork {
            reconnect()
        }
    }

    /// A tab whose views wait (`frozen`) hears nothing of the others' changes; released, its
    /// views catch up at once.
    private func setViewsFrozen(ownedBy tab: String, _ frozen: Bool) {
        guard tabs.context.setFrozen(tab, frozen) else { return }
        if !frozen {
            updateViews(queries.states.filter { $0.value.options.owner == tab }.map(\.key).sorted())
        }
    }

    /// A tab signs in as `user` (nil: it closed): its views show that user's queued writes.
    func setTabUser(_ tab: String, _ user: String?) {
        guard tabs.context.setUser(tab, user) else { return }
        updateViews(queries.states.filter { $0.value.options.owner == tab }.map(\.key).sorted())
    }

    /// A tab of a shared persistence closed: its listeners end, the other tabs' stay.
    func endListeners(ownedBy tab: String) {
        tabs.context.removeTab(tab)
        for (listenerID, entry) in queries.states where entry.options.owner == tab {
            events.finish(listenerID)
            removeListener(listenerID)
        }
    }

    /// The notifications this persistence's tabs broadcast to each other (the web SDK's
    /// SharedClientState over WebStorage), as a stream: first the online state, then every
    /// change of it, every mutation batch's state (pending, acknowledged, rejected) and every
    /// query target's (current, rejected).
    public func observeSharedClientState() throws(FiregateError) -> (AsyncStream<EdgeEvent>, AsyncStream<EdgeEvent>.Continuation) {
        if terminated { throw .clientState("The client has already been terminated.") }
        let (stream, output) = AsyncStream<EdgeEvent>.makeStream(bufferingPolicy: .bufferingOldest(EdgeClient.listenerBuffer))
        let observerID = events.allocateID()
        tabs.addObserver(observerID, output, onlineState: onlineState)
        output.onTermination = { [weak self] _ in
            Task { await self?.removeSharedStateObserver(observerID) }
        }
        return (stream, output)
    }

    private func removeSharedStateObserver(_ observerID: Int) { tabs.removeObserver(observerID) }

    /// Tells every `sharedClientState` stream.
    func broadcast(_ notification: JSON) { tabs.broadcast(notification) }

    func broadcastOnlineStateIfChanged() { tabs.broadcastOnlineStateIfChanged(onlineState) }

    /// Whether a listener or write comes from a tab other than the primary.
    func isSecondary(_ tab: String?) -> Bool { tab != nil && tab != tabs.context.primary }

    /// Every user's pending batch ids, and the next id a batch will get.
    func batchIDs() -> (Set<Int64>, Int64) {
        let all = local.mutationQueue.batches + local.queuesByUser.values.flatMap(\.batches)
        return (Set(all.map(\.id)), local.nextBatchID)
    }

    /// The watch state a tab that lost the lease without knowing it believes it has: the
    /// stream it had (`captured`), following the query targets the tabs listen to since — it
    /// asks for new ones and drops those nobody listens to — and keeping its limbo lookups.
    func staleWatchState(_ captured: JSON) -> JSON {
        guard let scripted = remote.scripted, case .object(var members) = captured else { return captured }
        let listened = Set(scripted.targets.values.filter { $0.purpose != .limboResolution }.map(\.id))
        var targets: [JSON] = []
        var seen: Set<Int> = []
        for item in captured["targets"]?.arrayValue ?? [] {
            guard let id = item["targetId"]?.integerLike.map(Int.init) else { continue }
            if item["purpose"] == .string(TargetPurpose.limboResolution.rawValue) || listened.contains(id) {
                targets.append(item)
                seen.insert(id)
            }
        }
        for item in scriptedWatchJSON["targets"]?.arrayValue ?? [] {
            guard let id = item["targetId"]?.integerLike.map(Int.init), listened.contains(id), !seen.contains(id) else { continue }
            targets.append(item.withMember("resumeToken", .string(tabs.context.termFirstRequests[id] ?? "")))
        }
        members["targets"] = .array(targets.sorted { ($0["targetId"]?.integerLike ?? 0) < ($1["targetId"]?.integerLike ?? 0) })
        return .object(members)
    }
}
