import Synchronization

/// A one-shot signal from the storage writer thread to the request awaiting durability.
final class DurabilitySignal: Sendable {
    private struct State {
        var result: Result<Void, any Error>?
        var waiter: CheckedContinuation<Void, any Error>?
        var callback: (@Sendable (Result<Void, any Error>) -> Void)?
    }

    private let state = Mutex(State())

    func complete(_ result: Result<Void, any Error>) {
        let (waiter, callback) = state.withLock { state in
            state.result = result
            defer {
                state.waiter = nil
                state.callback = nil
            }
            return (state.waiter, state.callback)
        }
        waiter?.resume(with: result)
        callback?(result)
    }

    /// Calls `body` once with the outcome (at once when it is known), for a waiter that is
    /// not a task (an event loop).
    func onComplete(_ body: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let ready = state.withLock { state -> Result<Void, any Error>? in
            if let result = state.result { return result }
            state.callback = body
            return nil
        }
        if let ready { body(ready) }
    }

    func wait() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let ready = state.withLock { state -> Result<Void, any Error>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}
