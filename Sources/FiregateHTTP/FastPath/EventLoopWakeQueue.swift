import NIOCore
import Synchronization

/// Wakes an event loop's `EventLoopStream`s from other threads with one task for all the streams
/// woken meanwhile, not one task each. A commit wakes every listener of a document from the
/// thread that publishes it; a task each meant a thousand task allocations and a thousand turns
/// of the loop's task lock on that thread, which shares the cores with the loops writing the
/// commit out (docs/webchannel.md, "Fan-out").
final class EventLoopWakeQueue: @unchecked Sendable {
    private struct State {
        var woken: [any EventLoopWakeable] = []
        /// A task that takes `woken` is on its way to the loop.
        var scheduled = false
    }

    private let loop: any EventLoop
    private let state = Mutex(State())
    /// The list the loop works through, swapped with `woken`: neither is allocated again at each
    /// wake-up. Touched only on the loop.
    private var taken: [any EventLoopWakeable] = []

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Has `waker`'s stream look at its source on the loop, soon; from any thread.
    func wake(_ waker: any EventLoopWakeable) {
        let schedule = state.withLock { state -> Bool in
            state.woken.append(waker)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule { loop.execute { self.run() } }
    }

    private func run() {
        state.withLock { state in
            state.scheduled = false
            swap(&state.woken, &taken)
        }
        for waker in taken { waker.drain() }
        taken.removeAll(keepingCapacity: true)
    }
}

/// What an `EventLoopWakeQueue` wakes: `EventLoopStream.Waker`.
protocol EventLoopWakeable: AnyObject, Sendable {
    /// Called on the queue's event loop.
    func drain()
}

/// The server's `EventLoopWakeQueue`s, one per event loop, made when a loop first serves a stream.
final class EventLoopWakeQueues: Sendable {
    private let queues = Mutex<[ObjectIdentifier: EventLoopWakeQueue]>([:])

    func queue(for loop: any EventLoop) -> EventLoopWakeQueue {
        queues.withLock { queues in
            if let queue = queues[ObjectIdentifier(loop)] { return queue }
            let queue = EventLoopWakeQueue(loop: loop)
            queues[ObjectIdentifier(loop)] = queue
            return queue
        }
    }
}
