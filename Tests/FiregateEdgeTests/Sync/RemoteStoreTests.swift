@testable import FiregateEdge
import FiregateModel
import XCTest

/// The remote store on its own, through its verbs: the streams run only when the switch is on
/// and no cause holds them closed; a scripted stream asks for a target only when they may run.
final class RemoteStoreTests: XCTestCase {
    let database = DatabaseID(project: "p")

    func target(_ id: Int) -> WatchTarget {
        WatchTarget(id: id, query: Query(collectionID: "c"), purpose: .listen)
    }

    func scriptedStore() -> RemoteStore {
        var remote = RemoteStore()
        var gates = remote.gates
        gates.scriptedWatch = true
        remote.setGates(gates)
        remote.resetScripted()
        return remote
    }

    func testEveryOfflineCauseHoldsTheStreamsClosed() {
        var remote = RemoteStore()
        XCTAssertTrue(remote.canUseNetwork)
        XCTAssertTrue(remote.hold(.storageFailure))
        XCTAssertFalse(remote.hold(.storageFailure), "a cause holds once")
        XCTAssertFalse(remote.canUseNetwork)
        XCTAssertTrue(remote.hold(.noPrimaryTab))
        XCTAssertTrue(remote.release(.storageFailure))
        XCTAssertFalse(remote.canUseNetwork, "one cause is enough")
        XCTAssertTrue(remote.release(.noPrimaryTab))
        XCTAssertFalse(remote.release(.noPrimaryTab))
        XCTAssertTrue(remote.canUseNetwork)
        remote.setOnline(false)
        XCTAssertFalse(remote.canUseNetwork)
    }

    func testAScriptedListenIsSentOnlyWhenTheStreamsMayRun() {
        var remote = scriptedStore()
        XCTAssertTrue(remote.isScripted)
        _ = remote.hold(.storageFailure)
        remote.listen(target(2))
        XCTAssertEqual(remote.scripted?.stream, .closed, "held closed: no stream opens")
        XCTAssertTrue(remote.scripted?.requests.isEmpty ?? false)
        _ = remote.release(.storageFailure)
        remote.listen(target(4))
        XCTAssertEqual(remote.scripted?.stream, .open)
        XCTAssertEqual(remote.scripted.map { Set($0.targets.keys) }, [2, 4], "both targets are listened to")
        remote.unlisten(2)
        XCTAssertEqual(remote.scripted.map { Set($0.targets.keys) }, [4])
    }

    func testAScriptedStreamMadeOfflineStaysClosedAndTheLiveWatchIgnoresScriptVerbs() {
        var remote = RemoteStore()
        remote.setOnline(false)
        var gates = remote.gates
        gates.scriptedWatch = true
        remote.setGates(gates)
        remote.resetScripted()
        remote.listen(target(2))
        XCTAssertEqual(remote.scripted?.stream, .closed, "made while offline, the stream does not open")

        var live = RemoteStore()
        live.listen(target(2))
        XCTAssertFalse(live.isScripted)
        XCTAssertFalse(live.reconnectScripted())
        XCTAssertFalse(live.closeScriptedIfIdle())
    }

    func testHeldTargetsAndWritesInFlight() {
        var remote = RemoteStore()
        remote.holdTargets([3, 1])
        remote.releaseHeldTarget(3)
        XCTAssertEqual(remote.heldTargets, [1])
        remote.releaseHeldTargets()
        XCTAssertTrue(remote.heldTargets.isEmpty)

        XCTAssertTrue(remote.takeWrite(7))
        XCTAssertFalse(remote.takeWrite(7), "a batch in flight is not sent twice")
        remote.writesAnswered([7])
        XCTAssertTrue(remote.takeWrite(7))
    }
}
