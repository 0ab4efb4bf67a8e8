@testable import FiregateHTTP
import Synchronization
import XCTest

/// The one wake-up a back channel on the event loop arms, and the keep-alive ticker's beat.
final class WakeSlotTests: XCTestCase {
    final class Count: Sendable {
        let value = Mutex(0)
        var now: Int { value.withLock { $0 } }
        func add() { value.withLock { $0 += 1 } }
    }

    func testNewsWhileNothingIsArmedIsKeptForTheNextLook() {
        let slot = WakeSlot(), woken = Count()
        slot.fire()
        XCTAssertFalse(slot.arm { woken.add() }, "news came since the look began: look again")
        slot.clearPending()
        XCTAssertTrue(slot.arm { woken.add() })
        slot.fire()
        slot.fire()
        XCTAssertEqual(woken.now, 1, "an armed wake-up is called once")
    }

    func testABeatWakesOnlyAStreamThatWroteNothingSinceTheLastBeat() {
        let slot = WakeSlot(), woken = Count()
        XCTAssertTrue(slot.arm { woken.add() })
        slot.noteWrite()
        slot.beat()
        XCTAssertEqual(woken.now, 0, "it wrote since the last beat: it owes no keep-alive")
        slot.beat()
        XCTAssertEqual(woken.now, 1, "quiet since the last beat: it looks")
        XCTAssertTrue(slot.arm { woken.add() })
        slot.beat()
        XCTAssertEqual(woken.now, 2)
    }
}
