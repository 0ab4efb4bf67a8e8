import FiregateModel

/// The SDK's online state as listeners see it.
public enum OnlineState: Sendable { case online, offline }

/// Decides which view snapshots a listener raises (core/event_manager.ts QueryListener):
/// metadata-only snapshots only with `includeMetadataChanges`, and the first snapshot held
/// back while a listener could still get a server answer and has nothing to show.
public struct QueryListener: Sendable {
    public let includeMetadataChanges: Bool
    /// A `source=cache` listener never waits for the server.
    public let cacheOnly: Bool
    public private(set) var raisedInitialEvent = false
    /// The last snapshot while the initial event is held back (an online-state change may
    /// raise it); only that, so a raised view's documents are not kept twice.
    private var heldSnapshot: ViewSnapshot?
    private var lastHadPendingWrites: Bool?

    public init(includeMetadataChanges: Bool, cacheOnly: Bool) {
        self.includeMetadataChanges = includeMetadataChanges
        self.cacheOnly = cacheOnly
    }

    /// A new view snapshot; returns the snapshot to raise, if any.
    public mutating func onViewSnapshot(_ snapshot: ViewSnapshot, onlineState: OnlineState) -> ViewSnapshot? {
        var snap = snapshot
        if !includeMetadataChanges {
            snap.changes = snap.changes.filter { $0.kind != .metadata }
        }
        var raised: ViewSnapshot?
        if !raisedInitialEvent {
            if shouldRaiseInitialEvent(snap, onlineState) {
                raisedInitialEvent = true
                raised = snap.asInitial()
            }
        } else if shouldRaiseEvent(snap) {
            raised = snap
        }
        heldSnapshot = raisedInitialEvent ? nil : snap
        lastHadPendingWrites = snap.hasPendingWrites
        return raised
    }

    /// The online state changed: an initial snapshot held back may now be raised.
    public mutating func onOnlineStateChange(_ onlineState: OnlineState) -> ViewSnapshot? {
        guard let heldSnapshot, !raisedInitialEvent, shouldRaiseInitialEvent(heldSnapshot, onlineState) else { return nil }
        raisedInitialEvent = true
        self.heldSnapshot = nil
        return heldSnapshot.asInitial()
    }

    func shouldRaiseInitialEvent(_ snap: ViewSnapshot, _ onlineState: OnlineState) -> Bool {
        if !snap.fromCache { return true }
        if cacheOnly { return true }
        return !snap.documents.isEmpty || snap.hasCachedResults || onlineState == .offline
    }

    func shouldRaiseEvent(_ snap: ViewSnapshot) -> Bool {
        if !snap.changes.isEmpty { return true }
        let pendingChanged = lastHadPendingWrites.map { $0 != snap.hasPendingWrites } ?? false
        if snap.syncStateChanged || pendingChanged { return includeMetadataChanges }
        return false
    }
}
