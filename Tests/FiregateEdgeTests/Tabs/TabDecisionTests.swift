import FiregateBackend
import FiregateModel
import FiregateTestSupport
import XCTest

@testable import FiregateEdge

/// The engine of a shared persistence applies the tabs' decisions whole, newest first wins: an
/// older decision reaching it late changes nothing.
final class TabDecisionTests: XCTestCase {
    func decision(_ generation: UInt64, primary: String?, online: Bool = true, frozen: Set<String> = []) -> TabDecision {
        TabDecision(generation: generation, primary: primary, primaryNetworkEnabled: online, primaryAuth: nil, frozenTabs: frozen, faults: [:])
    }

    func testTheNewestDecisionWinsAndTheNetworkFollowsThePrimary() async throws {
        let backend = try await Backend.inMemory(extraMigrations: EdgeClients.migrations)
        let engine = EdgeClients(backend: backend).client("engine")
        let first = await engine.applyTabDecision(decision(2, primary: "A", online: false))
        XCTAssertNotNil(first)
        let offline = await engine.isOnline
        XCTAssertFalse(offline, "the primary's switch is off")
        let late = await engine.applyTabDecision(decision(1, primary: "B", online: true))
        XCTAssertNil(late, "an older decision is ignored")
        let stillOffline = await engine.isOnline
        let primary = await engine.tabs.context.primary
        XCTAssertFalse(stillOffline)
        XCTAssertEqual(primary, "A")

        _ = await engine.applyTabDecision(decision(3, primary: nil))
        let paused = await engine.remote.offlineCauses.contains(.noPrimaryTab)
        XCTAssertTrue(paused, "between primaries the streams pause")
        let onlineState = await engine.onlineState
        XCTAssertEqual(onlineState, .offline, "the online state stays the last primary's")
        _ = await engine.applyTabDecision(decision(4, primary: "B", online: true, frozen: ["A"]))
        let (resumed, nowOnline, frozen) = await (engine.remote.offlineCauses.contains(.noPrimaryTab), engine.isOnline, engine.tabs.context.frozen)
        XCTAssertFalse(resumed)
        XCTAssertTrue(nowOnline)
        XCTAssertEqual(frozen, ["A"])
    }
}
