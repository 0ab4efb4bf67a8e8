import NIOCore
import Synchronization

/// Runs what connections need a task for, and keeps Hummingbird's server running until its
/// connections have closed — without a task per connection (a task keeps its frames for the
/// connection's whole life, and idle connections are many: docs/benchmarks.md).
///
/// Hummingbird's server returns once every `handle` it started has returned, and a graceful
/// shutdown first closes the listening socket, then asks each connection to quiesce. So the
/// first `handle` stays: in its task group it runs the jobs connections hand it (Hummingbird's
/// request loops, which thereby see the server's graceful shutdown as their own), until the
/// listening socket has closed and no connection is left; every other `handle` returns at once.
final class OpenConnections: Sendable {
    typealias Job = @Sendable () async -> Void

    private struct State {
        var open = 0
        var listening = true
        var watchingListener = false
        var runnerStarted = false
    }

    private let state = Mutex(State())
    private let jobs: AsyncStream<Job>
    private let jobInput: AsyncStream<Job>.Continuation

    init() {
        (jobs, jobInput) = AsyncStream.makeStream(of: Job.self)
    }

    /// Counts `channel` until it closes (and watches the listening socket it came from).
    func opened(_ channel: any Channel) {
        let watchListener = state.withLock { state -> Bool in
            state.open += 1
            defer { state.watchingListener = true }
            return !state.watchingListener
        }
        if watchListener, let listener = channel.parent {
            listener.closeFuture.whenComplete { [self] _ in update { $0.listening = false } }
        }
        channel.closeFuture.whenComplete { [self] _ in update { $0.open -= 1 } }
    }

    /// Runs `job` in the server's task tree (from any thread).
    func run(_ job: @escaping Job) {
        jobInput.yield(job)
    }

    private func update(_ change: (inout State) -> Void) {
        let drained = state.withLock { state -> Bool in
            change(&state)
            return !state.listening && state.open == 0
        }
        if drained { jobInput.finish() }
    }

    /// For a connection's `handle`: the first call runs the jobs until the server has drained;
    /// the others return at once.
    func runUntilDrained() async {
        let first = state.withLock { state -> Bool in
            defer { state.runnerStarted = true }
            return !state.runnerStarted
        }
        guard first else { return }
        await withDiscardingTaskGroup { group in
            for await job in jobs {
                group.addTask { await job() }
            }
        }
    }
}
