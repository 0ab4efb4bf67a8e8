import FiregateModel
import Foundation
import Synchronization

/// The emulated server's clock: wall time plus an offset, or a time frozen by the operations
/// surface (`POST /emulator/v1/clock`) so tests need no sleeps.
///
/// Times it hands out never go backwards, so commit times stay strictly ordered even when the
/// clock is set back or two commits land in the same microsecond. Code that waits for a
/// server time (schedules, expiries) uses `sleep(untilMicros:)`, which wakes early when the
/// clock is set or advanced.
public final class ServerClock: Sendable {
    private struct State {
        var offsetMicros: Int64 = 0
        /// When set, the clock stands still at this time until advanced or released.
        var frozenMicros: Int64?
        var last: Int64 = 0
        /// Bumped on every change, so sleepers re-read the time.
        var generation: UInt64 = 0
        var sleepers: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextSleeper: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Reports every change (for the operations event log).
    private let observer = Mutex<(@Sendable (Timestamp) -> Void)?>(nil)

    public init() {}

    private static func wallMicros() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000) }

    private static func reading(_ state: State) -> Int64 {
        state.frozenMicros ?? (wallMicros() + state.offsetMicros)
    }

    /// The current time, in microseconds since the epoch, never before a time handed out earlier.
    public func nowMicros() -> Int64 {
        state.withLock { state in
            let t = max(ServerClock.reading(state), state.last)
            state.last = t
            return t
        }
    }

    /// A fresh, strictly increasing time, for commit versions.
    public func nextCommitMicros() -> Int64 {
        state.withLock { state in
            let t = max(ServerClock.reading(state), state.last + 1)
            state.last = t
            return t
        }
    }

    public func now() -> Timestamp { Timestamp(microseconds: nowMicros()) }

    /// What the clock reads (the set time, even if earlier than times already handed out).
    public func readingMicros() -> Int64 { state.withLock { ServerClock.reading($0) } }

    /// Whether the clock stands still (set to a time) rather than following the wall clock.
    public var isFrozen: Bool { state.withLock { $0.frozenMicros != nil } }

    /// Moves the clock forward by `micros`; a frozen clock stays frozen at the later time.
    public func advance(byMicros micros: Int64) {
        change { state in
            if let frozen = state.frozenMicros {
                state.frozenMicros = frozen + micros
            } else {
                state.offsetMicros += micros
            }
        }
    }

    /// Stops the clock at `micros`; nil returns it to the wall clock.
    public func set(toMicros micros: Int64?) {
        change { state in
            state.frozenMicros = micros
            if micros == nil { state.offsetMicros = 0 }
        }
    }

    /// Calls `observer` after every set or advance.
    public func onChange(_ observer: @escaping @Sendable (Timestamp) -> Void) {
        self.observer.withLock { $0 = observer }
    }

    private func change(_ body: (inout State) -> Void) {
        let (sleepers, reading) = state.withLock { state in
            body(&state)
            state.generation &+= 1
            let sleepers = Array(state.sleepers.values)
            state.sleepers.removeAll()
            return (sleepers, ServerClock.reading(state))
        }
        for sleeper in sleepers { sleeper.resume() }
        observer.withLock { $0 }?(Timestamp(microseconds: reading))
    }

    /// Returns once the clock reads `micros` or later: by wall time passing or by the clock
    /// being set or advanced. Returns early (without reaching the time) when cancelled.
    public func sleep(untilMicros micros: Int64) async {
        while !Task.isCancelled {
            let (remaining, frozen, generation) = state.withLock { (micros - ServerClock.reading($0), $0.frozenMicros != nil, $0.generation) }
            if remaining <= 0 { return }
            // Wait for a change of the clock, and (unless it is frozen) for the wall time to pass.
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.waitForChange(after: generation) }
                if !frozen {
                    group.addTask { try? await Task.sleep(for: .microseconds(remaining)) }
                }
                await group.next()
                group.cancelAll()
            }
        }
    }

    private func waitForChange(after generation: UInt64) async {
        let id = state.withLock { state -> UInt64 in
            state.nextSleeper &+= 1
            return state.nextSleeper
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.sleepers[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.resume()
        }
    }
}
