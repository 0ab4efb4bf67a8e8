import FiregateBackend

/// The SDK's RemoteStore (remote/remote_store.ts), as state the coordinator owns: the network
/// switch and the test's gates, the watch stream (live on the backend's feed, or scripted by the
/// test), why the streams stay closed though the switch is on, what waits for a storage retry,
/// and the write pipeline.
struct RemoteStore {
    var network = NetworkConditions()
    var gates = Gates()
    /// The live watch on the backend's feed.
    var watch: WatchConnection?
    /// The live watch's server results and the remote events it builds from commits.
    var feed = FeedWatch()
    /// The watch stream as the test scripts it (`gates.scriptedWatch`), instead of `watch`.
    var scripted: ScriptedWatch?
    /// What waits to be retried after an injected persistence failure, and whether that holds
    /// the network down.
    var recovery = RecoveryQueue()
    /// Why the streams stay closed though the network switch is on (none: they may run).
    var offlineCauses: Set<OfflineCause> = []
    /// The queries the watch connection asks the feed for: its listeners' (the feed indexes
    /// them by collection, so other collections' commits never reach this client).
    let watchInterest = FeedInterest()
    /// Listeners whose server result changed while the watch gate was held.
    var heldTargets: Set<Int> = []
    var writePipeline = WritePipeline()

    /// Whether the streams may run: the switch is on and nothing holds them closed.
    var canUseNetwork: Bool { network.online && offlineCauses.isEmpty }

    // A scripted watch's calls read the switch first: the stream's own change must not overlap
    // a read of the store it lives in.

    /// remoteStoreListen: the script's stream asks for the target (once the network allows).
    mutating func listen(_ target: WatchTarget) {
        let networkOn = canUseNetwork
        scripted?.listen(target, networkOn: networkOn)
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

    /// A failed storage operation holds the network down (`offline`: the online state shows it).
    mutating func suspendScripted(offline: Bool) {
        let online = network.online
        scripted?.suspend(offline: offline && online)
    }
}
