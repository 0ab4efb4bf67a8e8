import FiregateWebChannel
import Foundation
import XCTest

/// Framing, acknowledgement, resending and ordering of one session (docs/webchannel.md).
final class WebChannelSessionTests: XCTestCase {
    func testChunksCountUTF16UnitsAndArraysAreNumberedFromOne() {
        XCTAssertEqual(WebChannelFraming.handshake(sessionID: "J8ds", keepAliveMilliseconds: 30_000), #"32\#n[[0,["c","J8ds","",8,12,30000]]]"#)
        XCTAssertEqual(WebChannelFraming.chunk("[1,5,7]"), "7\n[1,5,7]")
        XCTAssertEqual(WebChannelFraming.chunk(#""é😀""#), "5\n\"é😀\"")  // é is one unit, the emoji two
        XCTAssertEqual(WebChannelFraming.forwardAnswer(backChannelOpen: true, lastArrayID: 5, outstanding: 7), "7\n[1,5,7]")
        var outbox = WebChannelOutbox()
        XCTAssertEqual(outbox.append(WebChannelFraming.noop), 1)
        XCTAssertEqual(outbox.append(WebChannelFraming.message(#"{"targetChange":{}}"#)), 2)
        XCTAssertEqual(WebChannelFraming.arrays(outbox.arrays(after: 0)), #"[[1,["noop"]],[2,[{"targetChange":{}}]]]"#)
    }

    func testAcknowledgedArraysAreDroppedAndTheRestAreSentAgain() {
        var outbox = WebChannelOutbox()
        for n in 1...5 { outbox.append("[\(n)]") }
        outbox.acknowledge(through: 3)
        XCTAssertEqual(outbox.arrays(after: 0).map(\.id), [4, 5])  // a new back channel after AID=3
        XCTAssertEqual(outbox.arrays(after: 4).map(\.id), [5])
        outbox.acknowledge(through: 99)  // beyond what was sent: only what exists
        XCTAssertEqual(outbox.acknowledged, 5)
        XCTAssertEqual(outbox.unacknowledged, 0)
        XCTAssertEqual(outbox.outstanding, 0)
        XCTAssertEqual(outbox.append("[6]"), 6)
        outbox.acknowledge(through: 2)  // late, lower: nothing changes
        XCTAssertEqual(outbox.arrays(after: 5).map(\.id), [6])
    }

    func testALimitCutsABatchButNeverToNothing() {
        var outbox = WebChannelOutbox()
        for _ in 0..<10 { outbox.append(String(repeating: "x", count: 100)) }
        XCTAssertEqual(outbox.arrays(after: 0, limit: 250).count, 2)
        XCTAssertEqual(outbox.arrays(after: 0, limit: 1).count, 1)
    }

    func testForwardMapsAreDeliveredOnceInOrder() throws {
        var order = WebChannelForwardOrder()
        XCTAssertEqual(try order.accept(offset: 0, messages: ["a"]), ["a"])
        XCTAssertEqual(try order.accept(offset: 2, messages: ["c", "d"]), [])  // map 1 is late
        XCTAssertEqual(try order.accept(offset: 1, messages: ["b", "c"]), ["b", "c", "d"])
        XCTAssertEqual(try order.accept(offset: 0, messages: ["a", "b", "c", "d", "e"]), ["e"])  // a retry with a new map
        XCTAssertEqual(order.next, 5)
        XCTAssertThrowsError(try order.accept(offset: 5 + WebChannelForwardOrder.window + 1, messages: ["z"]))
    }

    func testASenderWaitsForAcknowledgementBeyondTheLimit() async {
        let session = WebChannelSession(id: "s", outstandingLimit: 100)
        let first = await session.send([String(repeating: "x", count: 200)])
        XCTAssertTrue(first)
        let sent = expectation(description: "the second batch goes once the first is acknowledged")
        let task = Task {
            let ok = await session.send(["y"])
            XCTAssertTrue(ok)
            sent.fulfill()
        }
        try? await Task.sleep(for: .milliseconds(100))
        XCTAssertEqual(session.outstanding, 210)  // still waiting
        session.acknowledge(through: 1)
        await fulfillment(of: [sent], timeout: 5)
        _ = await task.value
        XCTAssertEqual(session.outstanding, 11)
    }

    func testEndingReleasesAWaitingSenderAndQueuesTheLastPayload() async {
        let session = WebChannelSession(id: "s", outstandingLimit: 10)
        await session.send([String(repeating: "x", count: 50)])
        let task = Task { await session.send(["y"]) }
        try? await Task.sleep(for: .milliseconds(50))
        session.end(.finished, last: WebChannelFraming.stop)
        let sent = await task.value
        XCTAssertFalse(sent)
        var channel = session.openBackChannel(acknowledging: 0)
        guard case .arrays(let arrays) = channel.poll() else { return XCTFail("the arrays stay readable") }
        XCTAssertEqual(arrays.map(\.payload), ["[" + String(repeating: "x", count: 50) + "]", #"["stop"]"#])
        channel.wrote(through: 2)
        XCTAssertEqual(channel.poll(), .ended)
    }

    func testANewBackChannelSupersedesTheOldOne() async {
        let session = WebChannelSession(id: "s")
        let old = session.openBackChannel(acknowledging: 0)
        XCTAssertEqual(old.poll(), .nothing)
        XCTAssertTrue(session.forwardAnswer.backChannelOpen)
        let new = session.openBackChannel(acknowledging: 0)
        XCTAssertEqual(old.poll(), .superseded)
        var wakeups = old.wakeups.makeAsyncIterator()
        let rang: Void? = await wakeups.next()
        XCTAssertNotNil(rang)  // the old one was woken to notice
        await session.send(["{}"])
        XCTAssertEqual(new.poll(), .arrays([WebChannelArray(id: 1, payload: "[{}]")]))
        new.close()
        XCTAssertFalse(session.forwardAnswer.backChannelOpen)
        old.close()  // an old request's end leaves the state alone
        XCTAssertFalse(session.activity.backChannelOpen)
    }

    func testAChunksLengthIsCountedFromItsPayloadsKnownLengths() {
        var outbox = WebChannelOutbox()
        let message = WebChannelMessage(json: #"{"documentChange":{"name":"é😀"}}"#)
        XCTAssertEqual(message.length, message.payload.utf16.count)
        for _ in 1...12 { outbox.append(message.payload, length: message.length) }
        outbox.append(WebChannelFraming.noop)
        for batch in [outbox.arrays(after: 0), outbox.arrays(after: 12), Array(outbox.arrays(after: 0).prefix(1))] {
            XCTAssertEqual(WebChannelFraming.arraysLength(batch), WebChannelFraming.arrays(batch).utf16.count)
        }
    }

    /// A back channel that is not a task (served on an event loop) is called when the stream
    /// queues, when the client's acknowledgement makes room again, and when a newer one
    /// supersedes it; `ring` reaches whichever is open now.
    func testACallBackChannelIsWokenByQueueingRoomRingingAndANewerOne() {
        let session = WebChannelSession(id: "s", outstandingLimit: 100)
        let first = Counter(), second = Counter()
        let channel = session.openBackChannel(acknowledging: 0) { first.add() }
        XCTAssertTrue(session.queue([WebChannelMessage(json: String(repeating: "x", count: 150))]))
        XCTAssertEqual(first.value, 1)
        XCTAssertFalse(session.hasRoom)
        guard case .arrays(let arrays) = channel.poll() else { return XCTFail("nothing to write") }
        session.acknowledge(through: arrays.last!.id)
        XCTAssertTrue(session.hasRoom)
        XCTAssertEqual(first.value, 2)
        session.ring()
        XCTAssertEqual(first.value, 3)
        _ = session.openBackChannel(acknowledging: 1) { second.add() }
        XCTAssertEqual(first.value, 4)
        XCTAssertEqual(channel.poll(), .superseded)
        session.ring()
        XCTAssertEqual(first.value, 4)
        XCTAssertEqual(second.value, 1)
        session.end(.closed)
        XCTAssertFalse(session.queue([WebChannelMessage(json: "{}")]))
        XCTAssertEqual(second.value, 2)
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func add() { lock.withLock { count += 1 } }
}
