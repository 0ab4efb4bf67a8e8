import XCTest

@testable import FiregateEdge

/// The primary lease of a shared web persistence: the SDK's canActAsPrimary rules, checked on the
/// scenarios of its persistence spec tests (times in microseconds).
final class PrimaryLeaseTests: XCTestCase {
    let second: Int64 = 1_000_000

    func testTheFirstTabIsPrimaryAndAValidLeaseIsNotTaken() {
        var lease = PrimaryLease()
        lease.open("a", visible: false, at: 0)
        lease.open("b", visible: true, at: 1)
        XCTAssertEqual(lease.primary(at: 1), "a", "a hidden holder keeps a valid lease against a visible tab")
        lease.refresh("b", at: 2)
        XCTAssertEqual(lease.primary(at: 2), "a")
        XCTAssertEqual(lease.tab("a")?.actsAsPrimary, true)
        XCTAssertEqual(lease.tab("b")?.actsAsPrimary, false)
    }

    func testAFreeLeaseGoesToTheForegroundTab() {
        // persistence_spec "Foreground tab acquires primary lease".
        var lease = PrimaryLease()
        lease.open("a", visible: false, at: 0)
        lease.open("b", visible: false, at: 1)
        lease.open("c", visible: true, at: 2)
        lease.close("a")
        XCTAssertNil(lease.primary(at: 3), "nobody holds it until a tab refreshes")
        lease.refresh("b", at: 3)
        XCTAssertNil(lease.primary(at: 3), "hidden b defers to visible c")
        lease.refresh("c", at: 4)
        XCTAssertEqual(lease.primary(at: 4), "c")
    }

    func testTheLeaseFollowsTheNetwork() {
        // persistence_spec "Primary lease bound to network state".
        var lease = PrimaryLease()
        lease.open("a", visible: false, at: 0)
        lease.update("a", networkEnabled: false)
        lease.refresh("a", at: 1)
        XCTAssertEqual(lease.primary(at: 1), "a", "alone, a keeps it offline")
        lease.open("b", visible: false, at: 2)
        XCTAssertEqual(lease.primary(at: 2), "a")
        lease.refresh("a", at: 3)
        XCTAssertNil(lease.primary(at: 3), "b has its network on: a gives the lease up")
        lease.refresh("b", at: 4)
        XCTAssertEqual(lease.primary(at: 4), "b")
        lease.update("b", networkEnabled: false)
        lease.refresh("b", at: 5)
        XCTAssertEqual(lease.primary(at: 5), "b", "no tab is better placed")
        lease.update("a", networkEnabled: true)
        lease.refresh("a", at: 6)
        XCTAssertEqual(lease.primary(at: 6), "b", "b's lease is still valid")
        lease.refresh("b", at: 7)
        lease.refresh("a", at: 8)
        XCTAssertEqual(lease.primary(at: 8), "a")
    }

    func testALeaseNotRefreshedExpiresAndStaleTabsDropOut() {
        var lease = PrimaryLease()
        lease.open("a", visible: true, at: 0)
        lease.open("b", visible: true, at: 0)
        XCTAssertEqual(lease.primary(at: 5 * second), "a")
        XCTAssertNil(lease.primary(at: 5 * second + 1), "older than MAX_PRIMARY_ELIGIBLE_AGE_MS")
        lease.refresh("b", at: 6 * second)
        XCTAssertEqual(lease.primary(at: 6 * second), "b")
        XCTAssertEqual(lease.activeTabs(at: 6 * second).map(\.id), ["b"], "a has not refreshed for 6 s")
        XCTAssertEqual(lease.stalePrimaries(at: 6 * second), ["a"], "a acts as primary until it refreshes")
        lease.refresh("a", at: 7 * second)
        XCTAssertEqual(lease.stalePrimaries(at: 7 * second), [])
        XCTAssertEqual(lease.tab("a")?.actsAsPrimary, false)
    }

    func testClaimClearsTheLeaseThenRefreshes() {
        var lease = PrimaryLease()
        lease.open("a", visible: false, at: 0)
        lease.open("b", visible: false, at: 1)
        lease.claim("b", at: 2)
        XCTAssertEqual(lease.primary(at: 2), "b")
        XCTAssertEqual(lease.stalePrimaries(at: 2), ["a"])
        lease.update("c-missing", visible: true)
        lease.open("c", visible: true, at: 3)
        lease.claim("a", at: 4)
        XCTAssertEqual(lease.primary(at: 4), nil, "hidden a defers to visible c even when it claims")
    }
}
