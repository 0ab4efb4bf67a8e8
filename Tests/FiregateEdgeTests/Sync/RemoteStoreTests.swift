@testable import FiregateEdge
import FiregateModel
import XCTest

/// The remote store's state on its own: the streams run only when the switch is on and no
/// cause holds them closed; a scripted stream asks for a target only when they may run.
final class RemoteStoreTests: XCTestCase {
    let database = DatabaseID(project: "p")

    func target(_ id: Int) -> WatchTarget {
        WatchTarget(id: id, query: Query(collectionID: "c"), purpose: .listen)
    }

    func testEveryOfflineCauseHoldsTheStreamsClosed() {
        var remote = RemoteStore()
        XCTAssertTrue(remote.canUseNetwork)
        remote.offlineCauses.insert(.storageFailure)
        XCTAssertFalse(remote.canUseNetwork)
        remote.offlineCauses.insert(.noPrimaryTab)
        remote.offlineCauses.remove(.storageFailure)
        XCTAssertFalse(remote.canUseNetwork, "one cause is enough")
        remote.offlineCauses.removeAll()
        remote.network.online = false
        XCTAssertFalse(remote.canUseNetwork)
    }

    func testAScriptedListenIsSentOnlyWhenTheStreamsMayRun() {
        var remote = RemoteStore()
        remote.scripted = ScriptedWatch()
        remote.offlineCauses.insert(.storageFailure)
        remote.listen(target(2))
        XCTAssertEqual(remote.scripted?.stream, .closed, "held closed: no stream opens")
        XCTAssertTrue(remote.scripted?.requests.isEmpty ?? false)
        remote.offlineCauses.removeAll()
        remote.listen(target(4))
        XCTAssertEqual(remote.scripted?.stream, .open)
        XCTAssertEqual(remote.scripted.map { Set($0.targets.keys) }, [2, 4], "both targets are listened to")
    }
}
