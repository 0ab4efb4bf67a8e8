import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The load of the stored documents at start, done on its own thread so the server answers
/// (`/healthz`, the tree, the dashboard) at once; whatever needs the documents waits for it.
/// A failed load never lets them through: the server stops on it (see `wait()`).
final class StartupLoad: Sendable {
    private struct State {
        var outcome: Result<Void, any Error>?
        var waiters: [CheckedContinuation<Void, any Error>] = []
    }

    private let finished = Atomic<Bool>(false)
    /// Left only on success, so blocked callers never see a half-loaded store.
    private let group = DispatchGroup()
    private let state = Mutex(State())

    init() { group.enter() }

    /// Runs `load` on a thread of its own, at a lower priority than the threads serving
    /// requests, so it never slows the start it is kept out of.
    func start(_ load: @escaping @Sendable () throws -> Void) {
        Thread.detachNewThread { [self] in
            #if os(Linux)
            // Linux applies a process priority of "0" (the caller) to the calling thread only.
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
            #endif
            let outcome = Result { try load() }
            if case .success = outcome {
                finished.store(true, ordering: .releasing)
                group.leave()
            }
            let waiters = state.withLock { state in
                state.outcome = outcome
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(with: outcome) }
        }
    }

    /// Whether the load is done (never blocks).
    var isFinished: Bool { finished.load(ordering: .acquiring) }

    /// Blocks the calling thread until the load is done (cheap once it is).
    func waitUntilLoaded() {
        if finished.load(ordering: .acquiring) { return }
        group.wait()
    }

    /// Returns once the load is done; throws its error if it failed.
    func wait() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let outcome = state.withLock { state in
                if state.outcome == nil { state.waiters.append(continuation) }
                return state.outcome
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }
}
