@testable import FiregateHTTP
import NIOCore
import NIOPosix
import Synchronization
import XCTest

/// Streams woken from other threads look at their sources on their event loop, every one of
/// them, and a wake-up during a look is not lost.
final class EventLoopWakeQueueTests: XCTestCase {
    final class Probe: EventLoopWakeable {
        let loop: any EventLoop
        let looks = Mutex(0)
        let offLoop = Atomic(0)
        /// Wakes itself again from its first look (news that comes while it looks).
        let again: EventLoopWakeQueue?

        init(_ loop: any EventLoop, again: EventLoopWakeQueue? = nil) {
            self.loop = loop
            self.again = again
        }

        func drain() {
            if !loop.inEventLoop { offLoop.add(1, ordering: .relaxed) }
            let first = looks.withLock { looks -> Bool in
                looks += 1
                return looks == 1
            }
            if first, let again { again.wake(self) }
        }

        var count: Int { looks.withLock { $0 } }
    }

    func testEveryStreamWokenFromAnotherThreadLooksOnItsLoop() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let queue = EventLoopWakeQueues().queue(for: loop)
        let probes = (0..<1000).map { _ in Probe(loop) }
        let threads = 4
        DispatchQueue.concurrentPerform(iterations: threads) { part in
            for index in stride(from: part, to: probes.count, by: threads) { queue.wake(probes[index]) }
        }
        try loop.submit {}.wait()
        XCTAssertEqual(probes.map(\.count), Array(repeating: 1, count: probes.count), "each stream looks once for its wake-up")
        XCTAssertEqual(probes.map { $0.offLoop.load(ordering: .relaxed) }.reduce(0, +), 0, "every look is on the loop")
    }

    func testAWakeUpDuringALookIsNotLost() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let queue = EventLoopWakeQueue(loop: loop)
        let probe = Probe(loop, again: queue)
        queue.wake(probe)
        try loop.submit {}.wait()
        try loop.submit {}.wait()
        XCTAssertEqual(probe.count, 2)
    }

    func testOneQueuePerLoop() {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        let queues = EventLoopWakeQueues()
        let (a, b) = (group.next(), group.next())
        XCTAssertTrue(queues.queue(for: a) === queues.queue(for: a))
        XCTAssertFalse(queues.queue(for: a) === queues.queue(for: b))
    }
}
