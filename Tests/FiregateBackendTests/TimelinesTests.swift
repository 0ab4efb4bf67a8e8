@testable import FiregateBackend
import FiregateModel
import XCTest

/// `Timelines`: lanes, the bounded ring of events, filters, and live subscribers.
final class TimelinesTests: XCTestCase {
    private func frozenClock() -> ServerClock {
        let clock = ServerClock()
        clock.set(toMicros: 1_700_000_000_000_000)
        return clock
    }

    func testEventsKeepTheirOrderAndLaneAndFiltersNarrowThem() {
        let clock = frozenClock()
        let timelines = Timelines(clock: clock)
        let a = timelines.open(kind: "client", name: "A", protocol: "edge", project: "p", action: "created")
        let c = timelines.open(kind: "connection", name: "c1", protocol: "firestore-grpc", project: "p", appId: "1:1:web:x", action: "opened")
        a.network(online: false, cause: "networkSwitch")
        a.writeQueued("1", documents: ["cities/SF"])
        clock.advance(byMicros: 1_000)
        c.writeSent("w1", documents: ["cities/LA"])
        a.network(online: true)
        a.writeRejected("1", error: FiregateError(.permissionDenied, "no"), decision: "7")

        let all = timelines.events(TimelineFilter())
        XCTAssertEqual(all.map(\.seq), Array(1...7))
        var onlyA = TimelineFilter()
        onlyA.lanes = ["client:A"]
        XCTAssertEqual(timelines.events(onlyA).map(\.kind), [.lifecycle, .network, .writeQueued, .network, .writeRejected])
        var kinds = TimelineFilter()
        kinds.kinds = [.network]
        XCTAssertEqual(timelines.events(kinds).count, 2)
        var since = TimelineFilter()
        since.sinceMicros = 1_700_000_000_001_000
        XCTAssertEqual(timelines.events(since).map(\.seq), [5, 6, 7])
        var newest = TimelineFilter()
        newest.limit = 2
        XCTAssertEqual(timelines.events(newest).map(\.seq), [6, 7], "a limit keeps the newest, oldest first")

        let rejected = all.last!.json
        XCTAssertEqual(rejected.member("lane"), .string("client:A"))
        XCTAssertEqual(rejected.member("kind"), .string("writeRejected"))
        XCTAssertEqual(rejected.member("status"), .string("PERMISSION_DENIED"))
        XCTAssertEqual(rejected.member("decision"), .string("7"))
        XCTAssertEqual(timelines.lanes().map(\.id), ["client:A", "connection:c1"])
        XCTAssertEqual(timelines.lane("connection:c1")?.json.member("appId"), .string("1:1:web:x"))
    }

    func testTheNewestEventsStayAndAClosedLaneGoesWithItsLastEvent() {
        let timelines = Timelines(clock: frozenClock(), capacity: 5)
        let gone = timelines.open(kind: "connection", name: "c1", protocol: "rtdb-websocket", project: nil, action: "opened")
        gone.listenOpened("/a", target: "/a")
        timelines.close("connection:c1", action: "closed")
        let a = timelines.open(kind: "client", name: "A", protocol: "edge", project: nil, action: "created")
        for n in 1...2 { a.writeQueued(String(n), documents: ["c/\(n)"]) }
        XCTAssertEqual(timelines.count, 5)
        a.writeQueued("3", documents: ["c/3"])
        XCTAssertEqual(timelines.count, 5)
        XCTAssertEqual(timelines.events(TimelineFilter()).map(\.seq), [3, 4, 5, 6, 7], "the oldest events went, whatever their lane")
        XCTAssertNotNil(timelines.lane("connection:c1"), "its last event is still kept")
        for n in 4...5 { a.writeQueued(String(n), documents: ["c/\(n)"]) }
        XCTAssertNil(timelines.lane("connection:c1"), "a closed lane goes with its last event")
        XCTAssertEqual(timelines.events(TimelineFilter()).map(\.seq), [5, 6, 7, 8, 9])
        timelines.clear()
        XCTAssertEqual(timelines.count, 0)
        XCTAssertEqual(timelines.lanes().map(\.id), ["client:A"], "an open lane stays through a clear")
    }

    func testOnlyTheNewestClosedLanesAreKept() {
        let timelines = Timelines(clock: frozenClock(), closedLaneLimit: 2)
        for n in 1...4 {
            let lane = timelines.open(kind: "connection", name: "c\(n)", protocol: "firestore-grpc", project: nil, action: "opened")
            lane.listenOpened("1", target: "rooms")
            timelines.close("connection:c\(n)", action: "closed", fields: [("reason", .string("gone"))])
        }
        let open = timelines.open(kind: "connection", name: "c5", protocol: "firestore-grpc", project: nil, action: "opened")
        open.listenOpened("1", target: "rooms")
        XCTAssertEqual(timelines.lanes().map(\.id), ["connection:c3", "connection:c4", "connection:c5"])
        XCTAssertEqual(timelines.count, 8, "the dropped lanes' events are gone with them")
        XCTAssertEqual(Set(timelines.events(TimelineFilter()).map(\.lane)), ["connection:c3", "connection:c4", "connection:c5"])
        XCTAssertEqual(timelines.lane("connection:c4")?.json.member("closed"), .string("2023-11-14T22:13:20Z"))
        // A forgotten lane, or one never opened, takes no steps (a late step must not revive it).
        timelines.recorder("connection:c1").listenClosed("1")
        timelines.recorder("client:Z").network(online: false)
        XCTAssertNil(timelines.lane("connection:c1"))
        XCTAssertNil(timelines.lane("client:Z"))
        XCTAssertEqual(timelines.count, 8)
    }

    func testASnapshotListsItsFirstChangesAndCountsThemAll() {
        let timelines = Timelines(clock: frozenClock())
        let a = timelines.open(kind: "client", name: "A", protocol: "edge", project: nil, action: "created")
        let changed = (1...25).map { TimelineChange("added", "c/\($0)") }
        a.snapshot("1", fromCache: true, hasPendingWrites: true, documents: 25, changes: 25, changed: changed)
        let json = timelines.events(TimelineFilter()).last!.json
        XCTAssertEqual(json.member("changes"), .int(25))
        guard case .array(let listed)? = json.member("changed") else { return XCTFail("no changed list") }
        XCTAssertEqual(listed.count, TimelineEvent.listedChanges)
        XCTAssertEqual(listed.first, ["type": "added", "path": "c/1"])
    }

    func testASubscriberHearsTheKeptEventsThenNewOnesOfItsLanes() async {
        let timelines = Timelines(clock: frozenClock())
        let a = timelines.open(kind: "client", name: "A", protocol: "edge", project: nil, action: "created")
        let b = timelines.open(kind: "client", name: "B", protocol: "edge", project: nil, action: "created")
        var filter = TimelineFilter()
        filter.lanes = ["client:A"]
        let subscription = timelines.subscribe(filter)
        b.network(online: false)
        a.network(online: false)
        subscription.finish()
        var heard: [(String, TimelineEvent.Kind)] = []
        for await event in subscription.events { heard.append((event.lane, event.kind)) }
        XCTAssertEqual(heard.map(\.0), ["client:A", "client:A"])
        XCTAssertEqual(heard.map(\.1), [.lifecycle, .network])
    }
}
