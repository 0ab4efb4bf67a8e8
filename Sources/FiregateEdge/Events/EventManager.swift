import FiregateBackend
import FiregateModel

/// The SDK's EventManager (core/event_manager.ts): the open listeners and `onSnapshotsInSync`
/// observers, and the client-wide event counter (the SSE `id:`). The only code that yields to
/// their streams or ends them; the coordinator computes the views and hands over what to raise.
struct EventManager {
    /// Open listeners by id: their options, raising rules and the stream each feeds.
    private(set) var listeners: [Int: ListenerRegistration] = [:]
    /// `onSnapshotsInSync` observers, by id.
    private(set) var inSyncObservers: [Int: AsyncStream<EdgeEvent>.Continuation] = [:]
    private var nextID = 1
    /// Snapshots raised so far, over every listener of the client.
    private(set) var eventCounter: Int64 = 0
    /// Where each raised snapshot is recorded (the client's timeline lane).
    let timeline: TimelineRecorder?

    init(timeline: TimelineRecorder? = nil) {
        self.timeline = timeline
    }

    /// An id for a new listener or observer, never reused.
    mutating func allocateID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    mutating func add(_ listenerID: Int, _ registration: ListenerRegistration) { listeners[listenerID] = registration }

    mutating func remove(_ listenerID: Int) { listeners[listenerID] = nil }

    /// A view's new snapshot: raised to the listener if its rules say so (QueryListener).
    mutating func onViewSnapshot(_ snapshot: ViewSnapshot, for listenerID: Int, onlineState: OnlineState, database: DatabaseID) {
        guard var registration = listeners[listenerID] else { return }
        // The listener's rules keep state whether or not they raise.
        if let raised = registration.listener.onViewSnapshot(snapshot, onlineState: onlineState) { emit(raised, to: &registration, listenerID: listenerID, database: database) }
        listeners[listenerID] = registration
    }

    /// The online state changed: listeners whose first snapshot waited for it may raise it now.
    mutating func onOnlineStateChange(_ onlineState: OnlineState, for ids: [Int], database: DatabaseID) {
        for listenerID in ids {
            guard var registration = listeners[listenerID] else { continue }
            if let raised = registration.listener.onOnlineStateChange(onlineState) { emit(raised, to: &registration, listenerID: listenerID, database: database) }
            listeners[listenerID] = registration
        }
    }

    /// A raised snapshot goes out on the listener's stream; a listener too far behind is ended.
    private mutating func emit(_ snapshot: ViewSnapshot, to registration: inout ListenerRegistration, listenerID: Int, database: DatabaseID) {
        eventCounter += 1
        timeline?.snapshot(String(listenerID), fromCache: snapshot.fromCache, hasPendingWrites: snapshot.hasPendingWrites,
                           documents: snapshot.documents.count,
                           changes: snapshot.changes.count,
                           changed: snapshot.changes.prefix(TimelineEvent.listedChanges).map { TimelineChange($0.kind.name, $0.document.document.path.description) },
                           extra: [("snapshotId", .int(eventCounter))])
        let body = JSONWriter.bytes(snapshot.render(database: database, options: registration.options))
        if case .dropped = registration.output.yield(.snapshot(id: eventCounter, body: body)) {
            registration.output.yield(.error(FiregateError(.resourceExhausted, "The listener fell too far behind and was closed.")))
            registration.output.finish()
        }
    }

    /// `event: sync` on every listener and observer.
    func sync(token: String) {
        for entry in listeners.values { entry.output.yield(.sync(token: token)) }
        for observer in inSyncObservers.values { observer.yield(.sync(token: token)) }
    }

    /// `onSnapshotsInSync`: the observer hears once at once, then after every pass that raised.
    mutating func addInSyncObserver(_ output: AsyncStream<EdgeEvent>.Continuation) -> Int {
        let observerID = allocateID()
        inSyncObservers[observerID] = output
        output.yield(.snapshotsInSync)
        return observerID
    }

    mutating func removeInSyncObserver(_ observerID: Int) { inSyncObservers[observerID] = nil }

    /// After a pass over the views: if any listener raised a snapshot, they are all in sync.
    func raiseSnapshotsInSync(ifRaisedSince counter: Int64) {
        guard eventCounter != counter else { return }
        for observer in inSyncObservers.values { observer.yield(.snapshotsInSync) }
    }

    /// The listeners of one query get the error and end (a listen watch refused).
    mutating func endListeners(ofQuery queryID: String, with error: FiregateError) {
        for (listenerID, entry) in listeners where entry.queryID == queryID {
            listeners[listenerID] = nil
            entry.output.yield(.error(FiregateError(error.status, error.message)))
            entry.output.finish()
        }
    }

    /// A listener's stream ends, with no error; the coordinator then removes it.
    func finish(_ listenerID: Int) { listeners[listenerID]?.output.finish() }

    /// Every listener and observer ends, with `error` if there is one (restart, shutdown).
    mutating func endAll(with error: FiregateError?) {
        let outputs = listeners.values.map(\.output) + inSyncObservers.values
        listeners.removeAll()
        inSyncObservers.removeAll()
        for output in outputs {
            if let error { output.yield(.error(error)) }
            output.finish()
        }
    }
}
