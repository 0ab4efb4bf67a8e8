@testable import FiregateEdge
import FiregateModel
import XCTest

/// The tabs' notification streams on their own: the online state once per change, batches and
/// targets as the web SDK's shared client state words them.
final class TabCoordinatorTests: XCTestCase {
    func testTheStreamsHearTheOnlineStateOncePerChange() async {
        var tabs = TabCoordinator()
        let (stream, output) = AsyncStream<EdgeEvent>.makeStream()
        tabs.addObserver(1, output, onlineState: .online)
        tabs.broadcastOnlineStateIfChanged(.online)
        tabs.broadcastOnlineStateIfChanged(.online)
        tabs.broadcastOnlineStateIfChanged(.offline)
        tabs.broadcast(TabCoordinator.batchNotification(7, .pending))
        tabs.broadcast(TabCoordinator.targetNotification(2, "current"))
        tabs.endAll(with: nil)

        var got: [JSON] = []
        for await event in stream { if case .clientState(let json) = event { got.append(json) } }
        XCTAssertEqual(got, [
            ["type": "onlineState", "state": "online"],
            ["type": "onlineState", "state": "online"],
            ["type": "onlineState", "state": "offline"],
            ["type": "mutationBatch", "batchId": "7", "state": "pending"],
            ["type": "queryTarget", "targetId": 2, "state": "current"],
        ])
    }
}
