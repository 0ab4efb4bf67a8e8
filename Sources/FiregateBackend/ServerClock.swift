import FiregateModel
import Foundation
import Synchronization

/// The emulated server's clock: wall time plus an offset that operations can set or advance.
///
/// Times it hands out never go backwards, so commit times stay strictly ordered even when the
/// wall clock steps back or two commits land in the same microsecond.
public final class ServerClock: Sendable {
    private struct State {
        var offsetMicros: Int64 = 0
        var last: Int64 = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// The current time, in microseconds since the epoch.
    public func nowMicros() -> Int64 {
        let wall = Int64(Date().timeIntervalSince1970 * 1_000_000)
        return state.withLock { state in
            let t = max(wall + state.offsetMicros, state.last)
            state.last = t
            return t
        }
    }

    /// A fresh, strictly increasing time, for commit versions.
    public func nextCommitMicros() -> Int64 {
        let wall = Int64(Date().timeIntervalSince1970 * 1_000_000)
        return state.withLock { state in
            let t = max(wall + state.offsetMicros, state.last + 1)
            state.last = t
            return t
        }
    }

    public func now() -> Timestamp { Timestamp(microseconds: nowMicros()) }

    /// Moves the clock by `micros` (may be negative); issued times still never decrease.
    public func advance(byMicros micros: Int64) {
        state.withLock { $0.offsetMicros += micros }
    }
}
