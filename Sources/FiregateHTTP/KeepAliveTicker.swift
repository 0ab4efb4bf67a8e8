import FiregateBackend
import Foundation
import Synchronization

/// One timer for every open stream: each interval it calls every registered stream's beat,
/// which then writes a keep-alive. Cheaper than a sleeping task per stream, and a closed
/// stream frees everything at once (a cancelled `Task.sleep` holds its task until the
/// deadline it was sleeping to).
final class KeepAliveTicker: Sendable {
    /// A stream's place on the ticker, from `register(beat:)` until `unregister(_:)`.
    final class Registration: Sendable {}

    /// What a beat does: a subscription is kept as itself (no closure to allocate for each of
    /// the many idle streams).
    private enum Beat: Sendable {
        case heartbeat(FeedSubscription)
        case call(@Sendable () -> Void)

        func callAsFunction() {
            switch self {
            case .heartbeat(let subscription): subscription.deliver(.heartbeat)
            case .call(let beat): beat()
            }
        }
    }

    private struct State {
        var beats: [ObjectIdentifier: Beat] = [:]
        var running = false
    }

    private let interval: Duration
    private let state = Mutex(State())

    init(seconds: Double) {
        interval = .milliseconds(Int64(max(seconds, 0.01) * 1000))
    }

    /// A feed subscription's keep-alive arrives as a heartbeat event.
    func register(_ subscription: FeedSubscription) {
        add(ObjectIdentifier(subscription), .heartbeat(subscription))
    }

    func unregister(_ subscription: FeedSubscription) {
        remove(ObjectIdentifier(subscription))
    }

    /// Calls `beat` every interval until the registration is unregistered.
    func register(beat: @escaping @Sendable () -> Void) -> Registration {
        let registration = Registration()
        add(ObjectIdentifier(registration), .call(beat))
        return registration
    }

    func unregister(_ registration: Registration) {
        remove(ObjectIdentifier(registration))
    }

    /// Streams registered now (for tests).
    var registered: Int { state.withLock { $0.beats.count } }

    private func add(_ key: ObjectIdentifier, _ beat: Beat) {
        let start = state.withLock { state -> Bool in
            state.beats[key] = beat
            if state.running { return false }
            state.running = true
            return true
        }
        if start {
            Task.detached { [self] in await self.run() }
        }
    }

    private func remove(_ key: ObjectIdentifier) {
        _ = state.withLock { $0.beats.removeValue(forKey: key) }
    }

    private func run() async {
        while true {
            try? await Task.sleep(for: interval)
            let beats = state.withLock { state -> [Beat] in
                if state.beats.isEmpty { state.running = false }
                return Array(state.beats.values)
            }
            if beats.isEmpty { return }
            for beat in beats { beat() }
        }
    }
}
