import FiregateBackend
import FiregateModel

/// The SDK's RemoteStore (remote/remote_store.ts), as state the coordinator owns: the network
/// switch and the test's gates, the watch stream (live on the backend's feed, or scripted by the
/// test), why the streams stay closed though the switch is on, what waits for a storage retry,
/// and the write pipeline. Its state changes only through the verbs below.
struct RemoteStore {
    private(set) var network = NetworkConditions()
    private(set) var gates = Gates()
    /// The live watch on the backend's feed.
    private(set) var watch: WatchConnection?
    /// The live watch's server results and the remote events it builds from commits.
    private(set) var feed = FeedWatch()
    /// The watch stream as the test scripts it (`gates.scriptedWatch`), instead of `watch`.
    private(set) var scripted: ScriptedWatch?
    /// What waits to be retried after an injected persistence failure, and whether that holds
    /// the network down.
    private(set) var recovery = RecoveryQueue()
    /// Why the streams stay closed though the network switch is on (none: they may run).
    private(set) var offlineCauses: Set<OfflineCause> = []
    /// The queries the watch connection asks the feed for: its listeners' (the feed indexes
    /// them by collection, so other collections' commits never reach this client).
    let watchInterest = FeedInterest()
    /// Listeners whose server result changed while the watch gate was held.
    private(set) var heldTargets: Set<Int> = []
    private(set) var writePipeline = WritePipeline()

    /// Whether the streams may run: the switch is on and nothing holds them closed.
    var canUseNetwork: Bool { network.online && offlineCauses.isEmpty }

    /// Whether the test scripts the watch stream (else it is the backend's feed).
    var isScripted: Bool { scripted != nil }
}

// MARK: The network switch, the gates and what holds the streams closed

extension RemoteStore {
    mutating func setNetwork(_ conditions: NetworkConditions) {
        network = conditions
    }

    mutating func setOnline(_ online: Bool) {
        network.online = online
    }

    /// A rejection the test injected for the next write, taken once.
    mutating func takeInjectedRejection() -> FiregateError? {
        network.takeInjectedRejection()
    }

    mutating func setGates(_ next: Gates) {
        gates = next
    }

    /// `cause` holds the streams closed; false when it already did.
    mutating func hold(_ cause: OfflineCause) -> Bool {
        offlineCauses.insert(cause).inserted
    }

    /// `cause` no longer holds them; false when it did not.
    mutating func release(_ cause: OfflineCause) -> Bool {
        offlineCauses.remove(cause) != nil
    }

    /// `operation` waits for a storage retry.
    mutating func enqueueRecovery(_ operation: RecoveryQueue.Operation) {
        recovery.enqueue(operation)
    }

    /// The oldest waiting operation, if its storage works again under `faults`.
    mutating func takeRunnableRecovery(_ faults: StorageFaults) -> RecoveryQueue.Operation? {
        recovery.takeRunnable(faults)
    }

    /// A new instance: the old one's retries are gone with it.
    mutating func dropRecovery() {
        recovery.removeAll()
    }
}

// MARK: The live watch

extension RemoteStore {
    mutating func openWatch(on database: DocumentDatabase, for client: EdgeClient, rulesGeneration: UInt64) {
        watch = WatchConnection.open(on: database, for: client, interest: watchInterest)
        watch?.rulesGeneration = rulesGeneration
    }

    /// Closes the live watch. Without the feed, server results fall behind: the next one
    /// starts them anew.
    mutating func closeWatch() {
        watch?.close()
        watch = nil
        feed.dropResults()
    }

    /// The rules now in force: true when the listens were judged under other rules (and must
    /// be judged again).
    mutating func noteRulesGeneration(_ generation: UInt64) -> Bool {
        guard let judged = watch?.rulesGeneration, judged != generation else { return false }
        watch?.rulesGeneration = generation
        return true
    }

    mutating func takeServerResult(_ queryID: String, sequence: Int64, matches: QueryMatches?, unresolved: Set<ResourcePath>) {
        feed.takeServerResult(queryID, sequence: sequence, matches: matches, unresolved: unresolved)
    }

    mutating func markUnresolved(_ paths: Set<ResourcePath>, for queryID: String) {
        feed.markUnresolved(paths, for: queryID)
    }

    mutating func resolve(_ paths: Set<ResourcePath>, for queryID: String) {
        feed.resolve(paths, for: queryID)
    }

    /// The target no longer listens to the server.
    mutating func forgetServerResult(_ queryID: String) {
        feed.forget(queryID)
    }

    mutating func forgetServerResults() {
        feed.removeAll()
    }

    /// A commit's remote event for the targets behind it (`FeedWatch.remoteEvent`).
    mutating func remoteEvent(for record: CommitRecord, targets: [FeedWatch.Target], keys: (String) -> Set<ResourcePath>,
                              database: DatabaseID) -> (event: RemoteEvent, changed: Set<ResourcePath>) {
        feed.remoteEvent(for: record, targets: targets, keys: keys, database: database)
    }

    /// Listeners whose server result changed while the watch gate holds them.
    mutating func holdTargets(_ listenerIDs: some Sequence<Int>) {
        heldTargets.formUnion(listenerIDs)
    }

    mutating func releaseHeldTarget(_ listenerID: Int) {
        heldTargets.remove(listenerID)
    }

    mutating func releaseHeldTargets() {
        heldTargets.removeAll()
    }
}

// MARK: The scripted watch

// A scripted watch's calls read the switch first: the stream's own change must not overlap a
// read of the store it lives in. Each does nothing while the watch is the backend's feed.
extension RemoteStore {
    /// A new scripted stream (closed while the network cannot be used) if the gates script the
    /// watch, else none.
    mutating func resetScripted() {
        guard gates.scriptedWatch else {
            scripted = nil
            return
        }
        scripted = ScriptedWatch()
        if !canUseNetwork { scripted?.networkChanged(online: false) }
    }

    /// Hands `message` to the scripted stream; nil when the watch is not scripted. A message
    /// the stream refuses changes nothing.
    mutating func receiveScripted(_ message: WatchMessage, remoteKeys: @escaping (Int) -> Set<ResourcePath>, database: DatabaseID,
                                  lastSnapshot: Timestamp) throws(FiregateError) -> ScriptedWatch.Outcome? {
        guard var watch = scripted else { return nil }
        let outcome = try watch.receive(message, remoteKeys: remoteKeys, database: database, lastSnapshot: lastSnapshot)
        scripted = watch
        return outcome
    }

    /// remoteStoreListen: the script's stream asks for the target (once the network allows).
    mutating func listen(_ target: WatchTarget) {
        let networkOn = canUseNetwork
        scripted?.listen(target, networkOn: networkOn)
    }

    mutating func unlisten(_ targetID: Int) {
        scripted?.unlisten(targetID)
    }

    /// A target asked for again once the network is back (its rejection could not be applied).
    mutating func restore(_ target: WatchTarget) {
        scripted?.restore(target)
    }

    /// A lookup of the old primary's: the new primary's stream never asked for it.
    mutating func forget(_ targetID: Int) {
        scripted?.forget(targetID)
    }

    mutating func setResumeToken(_ targetID: Int, _ token: String, snapshotVersion: Timestamp) {
        scripted?.setResumeToken(targetID, token, snapshotVersion: snapshotVersion)
    }

    /// The network switch changed: the scripted stream closes, or opens and asks again.
    mutating func scriptedNetworkChanged(online: Bool) {
        scripted?.networkChanged(online: online)
    }

    /// A new user (or primary tab): the scripted stream opens again with its credentials.
    mutating func restartForCredentialChange() {
        let networkOn = canUseNetwork
        scripted?.restartForCredentialChange(networkOn: networkOn)
    }

    /// The stream's backoff elapsed: it reconnects if the network allows. True if it did.
    mutating func reconnectScripted() -> Bool {
        let networkOn = canUseNetwork
        return scripted?.reconnect(networkOn: networkOn) ?? false
    }

    /// A failed storage operation (or no primary tab) holds the network down (`offline`: the
    /// online state shows it).
    mutating func suspendScripted(offline: Bool) {
        let online = network.online
        scripted?.suspend(offline: offline && online)
    }

    /// The listen stream's idle timer: it closes if nothing is listened to. True if it did.
    mutating func closeScriptedIfIdle() -> Bool {
        scripted?.closeIfIdle() ?? false
    }

    /// The online state timer: the stream's failures make the client offline. True if they did.
    mutating func scriptedOnlineStateTimeout() -> Bool {
        scripted?.onlineStateTimeout() ?? false
    }
}

// MARK: The write pipeline

extension RemoteStore {
    /// A pump starts sending; false when one already is.
    mutating func startSending() -> Bool { writePipeline.startSending() }
    mutating func stopSending() { writePipeline.stopSending() }
    /// The next batches to send, at most `WritePipeline.maxPendingWrites` in flight.
    mutating func takeRound(from queue: [MutationBatch]) -> [MutationBatch] { writePipeline.takeRound(from: queue) }
    /// One batch to send on its own; false when it is already in flight.
    mutating func takeWrite(_ batchID: Int64) -> Bool { writePipeline.take(batchID) }
    mutating func writesAnswered(_ batchIDs: [Int64]) { writePipeline.answered(batchIDs) }
    mutating func writeSucceeded() { writePipeline.succeeded() }
    /// The write stream failed: the delay before it is tried again.
    mutating func backOffWrites() -> Double { writePipeline.backOff() }
}
