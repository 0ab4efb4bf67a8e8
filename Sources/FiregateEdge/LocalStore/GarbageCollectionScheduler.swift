import FiregateBackend
import Synchronization

/// Runs each client's LRU collection on the SDK's schedule — first a minute after the client
/// starts, then every five minutes — on the server clock, so a test that advances the clock
/// sees the runs at once. One timer for all clients: a sleeping task per client would cost
/// more than an idle client may.
final class GarbageCollectionScheduler: Sendable {
    private struct State {
        var due: [ObjectIdentifier: (client: WeakClient, micros: Int64)] = [:]
        var timer: Task<Void, Never>?
        var timerTarget: Int64 = .max
    }

    private struct WeakClient: @unchecked Sendable {
        weak var client: EdgeClient?
    }

    private let clock: ServerClock
    private let state = Mutex(State())

    init(clock: ServerClock) {
        self.clock = clock
    }

    /// Runs `client`'s collection once the server clock reaches now + `delayMicros`.
    func schedule(_ client: EdgeClient, afterMicros delayMicros: Int64) {
        let due = clock.nowMicros() + delayMicros
        state.withLock { state in
            state.due[ObjectIdentifier(client)] = (WeakClient(client: client), due)
            if due < state.timerTarget { restartTimer(&state, at: due) }
        }
    }

    func cancel(_ client: EdgeClient) {
        _ = state.withLock { $0.due.removeValue(forKey: ObjectIdentifier(client)) }
    }

    private func restartTimer(_ state: inout State, at micros: Int64) {
        state.timer?.cancel()
        state.timerTarget = micros
        state.timer = Task { [weak self] in
            guard let self else { return }
            await self.clock.sleep(untilMicros: micros)
            if Task.isCancelled { return }
            await self.runDue()
        }
    }

    private func runDue() async {
        let now = clock.nowMicros()
        let ready = state.withLock { state -> [EdgeClient] in
            var ready: [EdgeClient] = []
            for (key, entry) in state.due where entry.micros <= now {
                state.due[key] = nil
                if let client = entry.client.client { ready.append(client) }
            }
            state.timerTarget = .max
            state.timer = nil
            if let next = state.due.values.map(\.micros).min() { restartTimer(&state, at: next) }
            return ready
        }
        for client in ready where await client.runScheduledGarbageCollection() {
            schedule(client, afterMicros: LruGarbageCollector.regularDelayMicros)
        }
    }
}
