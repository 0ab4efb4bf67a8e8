@testable import FiregateEdge
import FiregateModel
import XCTest

/// What the engine knows of its tabs, through its verbs only.
final class TabContextTests: XCTestCase {
    func decision(_ generation: UInt64, primary: String?, faults: [String: StorageFaults] = [:]) -> TabDecision {
        TabDecision(generation: generation, primary: primary, primaryNetworkEnabled: true, primaryAuth: nil, frozenTabs: [], faults: faults)
    }

    func testOnlyANewerDecisionIsApplied() throws {
        var context = TabContext()
        var failing = StorageFaults()
        try failing.update(["storage": ["Release target"]])
        XCTAssertTrue(context.apply(decision(2, primary: "a", faults: ["b": failing])))
        XCTAssertEqual(context.primary, "a")
        XCTAssertEqual(context.faults["b"]?.fails(.releaseTarget), true)
        XCTAssertFalse(context.apply(decision(1, primary: "b")), "an older decision changes nothing")
        XCTAssertFalse(context.apply(decision(2, primary: "b")))
        XCTAssertEqual(context.primary, "a")
        XCTAssertEqual(context.appliedGeneration, 2)
    }

    func testAPrimarysLimboIdsGoOnWhereTheyStoppedInItsNextTerm() {
        var context = TabContext()
        XCTAssertEqual(context.beginTerm(of: "a", after: nil, oldNextTargetID: 1), 1)
        context.noteRequest(2, resumeToken: "t1")
        context.noteRequest(2, resumeToken: "t2")
        XCTAssertEqual(context.termFirstRequests[2], "t1", "the first request of the term is kept")
        context.trackLimbo(of: 2)
        XCTAssertEqual(context.limboTrackedTargets, [2])
        XCTAssertEqual(context.beginTerm(of: "b", after: "a", oldNextTargetID: 7), 1)
        XCTAssertEqual(context.limboTrackedTargets, [], "a new term tracks nothing yet")
        XCTAssertTrue(context.termFirstRequests.isEmpty)
        XCTAssertEqual(context.beginTerm(of: "a", after: "b", oldNextTargetID: 3), 7)
    }

    func testATabsUserFrozenViewsAndDeferredTargetsGoWithIt() {
        var context = TabContext()
        XCTAssertTrue(context.setUser("a", "ann"))
        XCTAssertFalse(context.setUser("a", "ann"))
        XCTAssertTrue(context.setFrozen("a", true))
        XCTAssertFalse(context.setFrozen("a", true))
        context.setFaults(StorageFaults(), ofTab: "a")
        context.removeTab("a")
        XCTAssertNil(context.users["a"])
        XCTAssertFalse(context.frozen.contains("a"))
        XCTAssertNil(context.faults["a"])

        context.deferListen("q1")
        context.deferUnlisten("q2")
        XCTAssertEqual(context.takeDeferredListens(), ["q1"])
        XCTAssertTrue(context.deferredListens.isEmpty)
        XCTAssertEqual(context.takeDeferredUnlistens(), ["q2"])
        XCTAssertTrue(context.deferredUnlistens.isEmpty)
    }
}
