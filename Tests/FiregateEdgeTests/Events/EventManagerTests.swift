@testable import FiregateEdge
import FiregateModel
import XCTest

/// The EventManager on its own: what it yields to listeners and observers, and when it ends them.
final class EventManagerTests: XCTestCase {
    let database = DatabaseID(project: "p")

    func snapshot(fromCache: Bool) -> ViewSnapshot {
        ViewSnapshot(documents: [], changes: [], mutatedPaths: [], fromCache: fromCache, syncStateChanged: true, hasCachedResults: false)
    }

    /// Registers a listener and returns what its stream received once the manager is done.
    func register(_ events: inout EventManager, queryID: String, cacheOnly: Bool = false) -> (Int, AsyncStream<EdgeEvent>) {
        let (stream, output) = AsyncStream<EdgeEvent>.makeStream()
        var options = ListenerOptions()
        options.cacheOnly = cacheOnly
        let id = events.allocateID()
        events.add(id, ListenerRegistration(queryID: queryID, options: options,
                                            listener: QueryListener(includeMetadataChanges: false, cacheOnly: cacheOnly), output: output))
        return (id, stream)
    }

    func received(_ stream: AsyncStream<EdgeEvent>) async -> [String] {
        var kinds: [String] = []
        for await event in stream {
            switch event {
            case .snapshot(let id, _): kinds.append("snapshot \(id)")
            case .error(let error): kinds.append("error \(error.status.rawValue)")
            case .sync(let token): kinds.append("sync \(token)")
            case .snapshotsInSync: kinds.append("inSync")
            default: kinds.append("other")
            }
        }
        return kinds
    }

    func testAnEmptyFirstSnapshotFromTheCacheWaitsUntilTheClientIsKnownOffline() async {
        var events = EventManager()
        let (a, streamA) = register(&events, queryID: "q")
        let (_, streamB) = register(&events, queryID: "other")
        let (inSync, observer) = AsyncStream<EdgeEvent>.makeStream()
        _ = events.addInSyncObserver(observer)

        var before = events.eventCounter
        events.onViewSnapshot(snapshot(fromCache: true), for: a, onlineState: .online, database: database)
        events.raiseSnapshotsInSync(ifRaisedSince: before)
        XCTAssertEqual(events.eventCounter, 0, "held back: empty, from the cache, online")
        before = events.eventCounter
        events.onOnlineStateChange(.offline, for: [a], database: database)
        events.raiseSnapshotsInSync(ifRaisedSince: before)
        XCTAssertEqual(events.eventCounter, 1, "offline, the held snapshot is raised")
        events.sync(token: "t")
        events.endListeners(ofQuery: "q", with: FiregateError(.permissionDenied, "no"))
        XCTAssertNil(events.listeners[a])
        events.endAll(with: nil)

        let (gotA, gotB, gotObserver) = await (received(streamA), received(streamB), received(inSync))
        XCTAssertEqual(gotA, ["snapshot 1", "sync t", "error PERMISSION_DENIED"])
        XCTAssertEqual(gotB, ["sync t"])
        XCTAssertEqual(gotObserver, ["inSync", "inSync", "sync t"])
    }
}
