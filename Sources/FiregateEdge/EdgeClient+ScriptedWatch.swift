import FiregateBackend
import FiregateModel

/// Scripted watch (docs/edge-clients.md): the test, not the backend, says what watch tells this client.
/// The remote side is `ScriptedWatch` (targets, stream, aggregator) and `LimboResolutions`;
/// this is the client's part of the SDK's sync engine and local store for it — listens go to
/// the script, snapshots enter the cache and the views, limbo documents get their lookups.
extension EdgeClient {
    /// `PUT gates {"scriptedWatch":bool}`: detaches the watch from the backend, or back.
    func setScriptedWatch(_ on: Bool) {
        guard on != remote.gates.scriptedWatch else { return }
        var gates = remote.gates
        gates.scriptedWatch = on
        remote.setGates(gates)
        stopWatch()
        resetScriptedWatch()
        if !on {
            // Back to the backend: every target is fetched again.
            ensureWatch()
            releaseWatch()
        }
    }

    /// A new SDK instance (or a new script): nothing is listened to on the remote side yet,
    /// and limbo lookup ids start over.
    func resetScriptedWatch() {
        queries.resetLimbo(maxConcurrent: remote.gates.maxConcurrentLimboResolutions)
        remote.resetScripted()
        guard remote.isScripted else { return }
        let queries = Set(queries.states.values.filter { !$0.options.cacheOnly }.map(\.queryID))
        for queryID in queries.sorted(by: { (local.targetCache.targets[$0]?.targetID ?? 0) < (local.targetCache.targets[$1]?.targetID ?? 0) }) {
            scriptedListen(queryID)
        }
    }

    /// remoteStoreListen for a listened query's target.
    func scriptedListen(_ queryID: String) {
        guard let target = local.targetCache.targets[queryID], let entry = queries.states.values.first(where: { $0.queryID == queryID }) else { return }
        tabs.context.noteRequest(target.targetID, resumeToken: target.resumeToken)
        remote.listen(WatchTarget(id: target.targetID, query: entry.query, purpose: .listen, resumeToken: target.resumeToken,
                                  snapshotVersion: target.snapshotVersion, lookupPath: entry.query.lookedUpPath(database: settings.databaseID)))
    }

    /// The last listener of a query left: its target is unlistened, its limbo documents released.
    func scriptedUnlisten(_ queryID: String) {
        guard remote.isScripted, let targetID = local.targetCache.targets[queryID]?.targetID else { return }
        remote.unlisten(targetID)
        applyLimboActions(queries.limbo.removeTarget(targetID))
    }

    /// What the client holds for a target: a lookup's document once received, else the
    /// query target's server result.
    private var scriptedRemoteKeys: (Int) -> Set<ResourcePath> {
        let targets = local.targetCache, lookups = queries.limbo
        return { id in lookups.remoteKeys(id) ?? targets.target(id: id)?.documents ?? [] }
    }

    /// `POST /clients/{id}/watch`: one message from "the server".
    public func deliverWatch(_ json: JSON) throws(FiregateError) -> JSON {
        try beginDataCall()
        guard let watch = remote.scripted else {
            throw .clientState("The client's watch is not scripted: PUT its gates {\"scriptedWatch\":true} first.")
        }
        let message = try WatchMessage(json: json, database: settings.databaseID)
        if case .targetChange(_, let ids, nil, _, _?) = message, ids.isEmpty, local.faults.fails(.getLastRemoteSnapshotVersion) {
            // The snapshot's check of the last remote version fails: the network goes down and
            // what watch sent since the last snapshot is lost with the stream.
            suspendNetwork(retrying: .probe)
            return scriptedWatchJSON
        }
        let wasOffline = watch.offline
        guard let outcome = try remote.receiveScripted(message, remoteKeys: scriptedRemoteKeys, database: settings.databaseID,
                                                       lastSnapshot: local.targetCache.lastRemoteSnapshotVersion) else { return scriptedWatchJSON }
        switch outcome {
        case .none:
            break
        case .remoteEvent(let event):
            if local.faults.fails(.applyRemoteEvent) {
                suspendNetwork(retrying: .probe)
            } else {
                applyRemoteEvent(event)
            }
        case .rejected(let targets, let error):
            rejectListens(targets, error)
        case .streamFailed(let offline):
            if offline {
                // OnlineState.Offline: every view stops being current.
                queries.markAllNotCurrent()
                updateViews()
            }
        }
        if wasOffline != (remote.scripted?.offline ?? false) { raiseOnlineState() }
        return scriptedWatchJSON
    }

    /// A consistent snapshot: the targets' keys and resume tokens, the documents, then every
    /// view (localStoreApplyRemoteEvent, then the sync engine's view pass).
    func applyRemoteEvent(_ event: RemoteEvent) {
        for (targetID, change) in event.targetChanges { queries.limbo.noteChange(targetID, change) }
        local.applyRemoteEvent(event)
        for (targetID, change) in event.targetChanges.sorted(by: { $0.key < $1.key }) where change.current && !queries.limbo.isLookup(targetID) {
            broadcast(TabCoordinator.targetNotification(targetID, "current"))
        }
        for queryID in Set(queries.states.values.map(\.queryID)) {
            if let targetID = local.targetCache.targets[queryID]?.targetID, let change = event.targetChanges[targetID] {
                queries.setCurrent(change.current, queryID: queryID)
                if change.current { tabs.context.trackLimbo(of: targetID) }
            }
        }
        let resets = Set(event.targetMismatches.keys.compactMap { local.targetCache.queryIDs[$0] })
        updateViews(pendingResets: resets)
    }

    /// Watch refused these targets: a limbo lookup loses the document, a query's listeners get
    /// the error and end (syncEngineRejectListen).
    private func rejectListens(_ targets: [WatchTarget], _ error: FiregateError) {
        for target in targets {
            let targetID = target.id
            if !queries.limbo.isLookup(targetID) { broadcast(TabCoordinator.targetNotification(targetID, "rejected")) }
            if queries.limbo.isLookup(targetID), local.faults.fails(.applyRemoteEvent) {
                // Dropping the document fails: the lookup stays, and is asked for again when
                // the network comes back.
                remote.restore(target)
                suspendNetwork(retrying: .probe)
            } else if let (path, actions) = queries.limbo.rejected(targetID) {
                local.beginOperation()
                local.acceptRemote(path, .missing(version: .zero))
                applyLimboActions(actions)
                updateViews()
            } else if let queryID = local.targetCache.queryIDs[targetID] {
                endListeners(ofQuery: queryID, with: error)
                applyLimboActions(queries.limbo.removeTarget(targetID))
                collectEagerGarbage()
            }
        }
    }

    /// After a pass over the views: each current view's limbo documents are tracked, and
    /// lookups start or stop.
    func updateScriptedLimbo() {
        guard remote.isScripted else { return }
        var byTarget: [Int: Set<ResourcePath>] = [:]
        for entry in queries.states.values where !entry.options.cacheOnly {
            guard let targetID = local.targetCache.targets[entry.queryID]?.targetID,
                  tabs.context.limboTrackedTargets?.contains(targetID) ?? true else { continue }
            byTarget[targetID, default: []].formUnion(entry.view.limboDocuments)
        }
        for (targetID, paths) in byTarget.sorted(by: { $0.key < $1.key }) { applyLimboActions(queries.limbo.update(targetID: targetID, limbo: paths)) }
    }

    private func applyLimboActions(_ actions: LimboResolutions.Actions) {
        for targetID in actions.unlisten { remote.unlisten(targetID) }
        for (targetID, path) in actions.listen {
            remote.listen(WatchTarget(id: targetID, query: .lookup(path, database: settings.databaseID), purpose: .limboResolution, lookupPath: path))
        }
    }

    /// `gates:releaseWrite {"count":n,"commitTime":t}` with a scripted watch: the oldest
    /// batches are acknowledged by the script at `commitTime`, without reaching the backend
    /// (the spec's writeAck at a version).
    public func acknowledgeWrites(count: Int, commitTime: Timestamp) throws(FiregateError) -> [(Int64, WriteState)] {
        guard remote.isScripted else {
            throw .clientState("Only a client with a scripted watch has writes acknowledged by the script (commitTime).")
        }
        guard remote.canUseNetwork else {
            throw .clientState("The client is offline: enable its network before releasing writes.")
        }
        var released: [(Int64, WriteState)] = []
        for _ in 0..<max(count, 0) {
            guard remote.canUseNetwork, let batch = local.mutationQueue.first else { break }
            let results = batch.writes.map { _ in WriteResult(updateTime: commitTime, transformResults: nil) }
            if !local.faults.fails(.acknowledgeBatch) { local.deleteSavedMutation(batch.id) }
            executeWithRecovery(.acknowledge(batch, CommitResult(commitTime: commitTime, writeResults: results)))
            released.append((batch.id, writeCallbacks[batch.id] ?? .pending))
        }
        return released
    }

    /// The scripted watch as the client state shows it.
    var scriptedWatchJSON: JSON {
        guard let scripted = remote.scripted else { return ["scripted": false] }
        let stream = switch scripted.stream {
        case .open: "open"
        case .closed: "closed"
        case .awaitingBackoff: "awaitingBackoff"
        }
        // The stream's listen requests, as watch would see them (the spec's activeTargets).
        let targets: [JSON] = scripted.requests.keys.sorted().compactMap { targetID in
            guard let target = scripted.targets[targetID], let request = scripted.requests[targetID] else { return nil }
            var json: JSON = ["targetId": .int(Int64(targetID)), "purpose": .string(request.purpose.rawValue),
                              "resumeToken": .string(request.resumeToken)]
            if request.readTime > .zero { json = json.withMember("readTime", .string(request.readTime.rfc3339)) }
            if let path = target.lookupPath {
                json = json.withMember("document", .string(settings.databaseID.resourceName(path)))
            } else if target.query.allDescendants {
                json = json.withMember("collectionGroup", .string(target.query.collectionID))
            } else {
                json = json.withMember("collection", .string(target.query.collectionPath.canonical))
            }
            return json
        }
        return [
            "scripted": true, "stream": .string(stream), "offline": .bool(scripted.offline), "requestCount": .int(Int64(scripted.requestCount)),
            "targets": .array(targets),
            "limboDocuments": .array(queries.limbo.activeByPath.keys.sorted().map { .string(settings.databaseID.resourceName($0)) }),
            "enqueuedLimboDocuments": .array(queries.limbo.enqueued.map { .string(settings.databaseID.resourceName($0)) }),
        ]
    }
}
