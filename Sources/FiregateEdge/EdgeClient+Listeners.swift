import FiregateModel

/// Listeners: registration, view updates and event delivery.
extension EdgeClient {
    /// Most snapshots a listener stream may have waiting before it is ended as too slow.
    static let listenerBuffer = 1000

    /// Opens a listener; its snapshots arrive on the returned stream. The continuation lets the
    /// stream's owner add keep-alives; finishing it ends the listener.
    public func listen(_ query: Query, options: ListenerOptions) throws(FiregateError) -> (AsyncStream<EdgeEvent>, AsyncStream<EdgeEvent>.Continuation) {
        try beginDataCall()
        // The listen's target is allocated in the local store first; if that fails, so does it.
        // A secondary tab allocates it in its own transaction.
        if isSecondary(options.owner), let owner = options.owner {
            if tabs.context.faults[owner]?.fails(.allocateTarget) == true { throw StorageFaults.error(.allocateTarget) }
        } else {
            try checkStorage(.allocateTarget)
        }
        let (stream, output) = AsyncStream<EdgeEvent>.makeStream(bufferingPolicy: .bufferingOldest(EdgeClient.listenerBuffer))
        let listenerID = events.allocateID()
        let queryID = query.targetCanonicalID
        local.allocateTarget(queryID)
        // A target another listener already keeps current starts current (its query state),
        // for a listener from the cache too: the SDK shares the query's view between them.
        queries.add(listenerID, query: query, options: options, view: QueryView(query: query, database: settings.databaseID))
        events.add(listenerID, ListenerRegistration(queryID: queryID, options: options,
                                                    listener: QueryListener(includeMetadataChanges: options.includeMetadataChanges, cacheOnly: options.cacheOnly),
                                                    output: output))
        timeline.listenOpened(String(listenerID), target: options.document?.description ?? query.timelineName)
        output.onTermination = { [weak self] _ in
            Task { await self?.removeListener(listenerID) }
        }
        // First the cache's answer, then (online) the server's.
        updateViews([listenerID])
        if !options.cacheOnly, remote.isScripted {
            // The script answers; offline, the stream asks once the network is back. Another
            // tab's query waits while the primary cannot allocate it.
            if isSecondary(options.owner) && local.faults.fails(.allocateTarget) {
                tabs.context.deferListen(queryID)
            } else {
                scriptedListen(queryID)
            }
            if onlineState == .offline { raiseOnlineState(for: [listenerID]) }
        } else if !options.cacheOnly && remote.canUseNetwork {
            ensureWatch()
            if remote.gates.holdWatch {
                remote.holdTargets([listenerID])
            } else {
                refreshTargets([listenerID])
            }
        } else if !options.cacheOnly {
            raiseOnlineState(for: [listenerID])
        }
        return (stream, output)
    }

    func removeListener(_ listenerID: Int) {
        events.remove(listenerID)
        guard let entry = queries.remove(listenerID) else { return }
        timeline.listenClosed(String(listenerID))
        noteStreamClosed()
        updateWatchInterest()
        remote.releaseHeldTarget(listenerID)
        // Another tab's query stays on watch while the primary cannot release it.
        let unlisten = isSecondary(entry.options.owner) && local.faults.fails(.releaseTarget)
            ? { (queryID: String) in self.tabs.context.deferUnlisten(queryID) } : scriptedUnlisten
        if !queries.listensToServer(entry.queryID) { remote.forgetServerResult(entry.queryID) }
        if !entry.options.cacheOnly, queries.states.values.contains(where: { $0.queryID == entry.queryID }),
           !queries.listensToServer(entry.queryID) {
            // Only listeners from the cache are left: the target stays, watch stops listening.
            unlisten(entry.queryID)
        } else if !queries.states.values.contains(where: { $0.queryID == entry.queryID }) {
            // The target's last listener: it becomes inactive now (releaseTarget), and the
            // documents its view showed are no longer referenced by it.
            if !entry.options.cacheOnly { unlisten(entry.queryID) }
            local.beginOperation()
            local.releaseTarget(entry.queryID)
            for doc in entry.view.documents { local.touch(doc.document.path) }
        }
        if !queries.states.values.contains(where: { !$0.options.cacheOnly }) { stopWatch() }
        collectEagerGarbage()
    }

    /// Recomputes the views of `ids` (all listeners when nil) and raises their snapshots.
    /// `pendingResets`: queries whose targets are being listened to again after an
    /// existence-filter mismatch (scripted watch). `changed`: when only these documents changed
    /// locally since the last update, a view that can (`QueryView.updatesIncrementally`, a
    /// single client's listener on the live watch) takes just them instead of re-running its query.
    func updateViews(_ ids: [Int]? = nil, pendingResets: Set<String> = [], changed: Set<ResourcePath>? = nil) {
        let raisedBefore = events.eventCounter
        defer { events.raiseSnapshotsInSync(ifRaisedSince: raisedBefore) }
        let ownView = localView()
        // Tabs signed in as another user than the primary's see that user's queue.
        var otherUsersViews: [String: LocalViewBuilder] = [:]
        for listenerID in ids ?? Array(queries.states.keys).sorted() {
            guard let owner = queries.states[listenerID].map(\.options.owner) else { continue }
            var builder = ownView
            if let owner {
                if tabs.context.frozen.contains(owner) { continue }
                if let user = tabs.context.users[owner], user != currentUser {
                    builder = otherUsersViews[user] ?? localView(for: user)
                    otherUsersViews[user] = builder
                }
            }
            let snapshot = queries.updateView(of: listenerID) { entry -> ViewSnapshot? in
                let current = entry.current && remote.network.online
                // A scripted watch's views know their target's keys, so they find limbo documents.
                let target = !remote.isScripted || entry.options.cacheOnly ? nil : local.targetCache.targets[entry.queryID]
                let hasCachedResults = target.map { !$0.resumeToken.isEmpty } ?? local.targetCache.hasCachedResults(entry.queryID)
                let unresolved = entry.options.cacheOnly ? [] : remote.feed.unresolved[entry.queryID] ?? []
                if let changed, entry.options.owner == nil, !remote.isScripted, entry.view.updatesIncrementally, entry.view.current != nil,
                   !pendingResets.contains(entry.queryID), unresolved.isEmpty {
                    let documents = changed.filter { entry.query.containsPath($0) }.map { ($0, builder.document($0)) }
                    return entry.view.apply(changed: documents, current: current, hasCachedResults: hasCachedResults)
                }
                return entry.view.update(result: builder.run(entry.query), current: current, hasCachedResults: hasCachedResults,
                                         syncedKeys: target?.documents, unresolved: unresolved,
                                         pendingReset: pendingResets.contains(entry.queryID))
            } ?? nil
            if let snapshot { events.onViewSnapshot(snapshot, for: listenerID, onlineState: onlineState, database: settings.databaseID) }
        }
        updateScriptedLimbo()
    }

    /// Gives listeners whose first snapshot was held back a chance to raise it.
    func raiseOnlineState(for ids: [Int]? = nil) {
        broadcastOnlineStateIfChanged()
        let raisedBefore = events.eventCounter
        defer { events.raiseSnapshotsInSync(ifRaisedSince: raisedBefore) }
        events.onOnlineStateChange(onlineState, for: ids ?? Array(queries.states.keys).sorted(), database: settings.databaseID)
    }

    /// Every open stream of this client emits `event: sync` with `token`, after the effects of
    /// everything published to the backend before the call.
    public func sync(token: String) async {
        if !remote.gates.holdWatch { await catchUpWithWatch() }
        events.sync(token: token)
        tabs.sync(token: token)
    }

    /// `onSnapshotsInSync`: the stream gets one event at once, then one after every change
    /// that raised a snapshot on any listener — when all of them show it (EventManager).
    public func observeSnapshotsInSync() throws(FiregateError) -> (AsyncStream<EdgeEvent>, AsyncStream<EdgeEvent>.Continuation) {
        try beginDataCall()
        let (stream, output) = AsyncStream<EdgeEvent>.makeStream(bufferingPolicy: .bufferingOldest(EdgeClient.listenerBuffer))
        let observerID = events.addInSyncObserver(output)
        output.onTermination = { [weak self] _ in
            Task { await self?.removeInSyncObserver(observerID) }
        }
        return (stream, output)
    }

    private func removeInSyncObserver(_ observerID: Int) { events.removeInSyncObserver(observerID) }

    /// The primary's retry: the other tabs' queries it could not take up or let go of go to
    /// watch now, if its storage works again. True if any did.
    func retryDeferredTargets() -> Bool {
        var ran = false
        if !tabs.context.deferredListens.isEmpty, !local.faults.fails(.allocateTarget) {
            for queryID in tabs.context.takeDeferredListens().sorted() where queries.listensToServer(queryID) {
                scriptedListen(queryID)
            }
            ran = true
        }
        if !tabs.context.deferredUnlistens.isEmpty, !local.faults.fails(.releaseTarget) {
            for queryID in tabs.context.takeDeferredUnlistens().sorted() where !queries.listensToServer(queryID) {
                scriptedUnlisten(queryID)
            }
            ran = true
        }
        return ran
    }

    /// A listen watch refused: every listener of the query gets the error and ends, and the
    /// target is released; cached documents stay (syncEngineRejectListen).
    func endListeners(ofQuery queryID: String, with error: FiregateError) {
        events.endListeners(ofQuery: queryID, with: error)
        queries.remove(queryID: queryID)
        remote.forgetServerResult(queryID)
        local.beginOperation()
        local.releaseTarget(queryID)
    }

    func endListeners(with error: FiregateError?) {
        events.endAll(with: error)
        queries.removeAll()
        remote.forgetServerResults()
        remote.releaseHeldTargets()
        tabs.endAll(with: error)
    }
}

extension Query {
    /// A query as the timeline names it: its collection (or group), whether it filters, its limit.
    var timelineName: String {
        var name = allDescendants ? "collectionGroup \(collectionID)" : collectionPath.description
        if filter != nil { name += " where …" }
        if let limit { name += limitToLast ? " limitToLast \(limit)" : " limit \(limit)" }
        return name
    }
}
