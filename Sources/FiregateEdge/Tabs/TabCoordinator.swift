import FiregateModel

/// The engine's side of a shared web persistence (the SDK's shared_client_state.ts): what it
/// knows of its tabs (`TabContext`), and the `sharedClientState` streams on which the tabs'
/// notifications to each other go out — online state, mutation batches, query targets.
struct TabCoordinator {
    var context = TabContext()
    private var observers: [Int: AsyncStream<EdgeEvent>.Continuation] = [:]
    /// The online state the streams were last told.
    private var toldOnlineState: OnlineState?

    /// A new stream hears the online state first.
    mutating func addObserver(_ observerID: Int, _ output: AsyncStream<EdgeEvent>.Continuation, onlineState: OnlineState) {
        observers[observerID] = output
        output.yield(.clientState(TabCoordinator.onlineNotification(onlineState)))
    }

    mutating func removeObserver(_ observerID: Int) { observers[observerID] = nil }

    /// Tells every stream.
    func broadcast(_ notification: JSON) {
        for observer in observers.values { observer.yield(.clientState(notification)) }
    }

    /// The online state, if it changed since the streams were last told.
    mutating func broadcastOnlineStateIfChanged(_ state: OnlineState) {
        guard state != toldOnlineState else { return }
        toldOnlineState = state
        broadcast(TabCoordinator.onlineNotification(state))
    }

    /// `event: sync` on every stream.
    func sync(token: String) {
        for observer in observers.values { observer.yield(.sync(token: token)) }
    }

    /// Every stream ends, with `error` if there is one.
    mutating func endAll(with error: FiregateError?) {
        let outputs = observers.values
        observers.removeAll()
        for output in outputs {
            if let error { output.yield(.error(error)) }
            output.finish()
        }
    }

    static func onlineNotification(_ state: OnlineState) -> JSON {
        ["type": "onlineState", "state": .string(state == .online ? "online" : "offline")]
    }

    static func batchNotification(_ batchID: Int64, _ state: WriteState) -> JSON {
        switch state {
        case .pending: ["type": "mutationBatch", "batchId": .string(String(batchID)), "state": "pending"]
        case .acknowledged: ["type": "mutationBatch", "batchId": .string(String(batchID)), "state": "acknowledged"]
        case .rejected(let error):
            ["type": "mutationBatch", "batchId": .string(String(batchID)), "state": "rejected", "error": JSON.errorBody(error)["error"] ?? .null]
        }
    }

    static func targetNotification(_ targetID: Int, _ state: String) -> JSON {
        ["type": "queryTarget", "targetId": .int(Int64(targetID)), "state": .string(state)]
    }
}
