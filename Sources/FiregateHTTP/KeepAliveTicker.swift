import FiregateBackend
import Foundation
import Synchronization

/// One timer for every open stream: each interval it sends a heartbeat to every registered
/// subscription, which then writes a keep-alive (cheaper than a sleeping task per stream).
final class KeepAliveTicker: Sendable {
    private struct State {
        var subscriptions: [ObjectIdentifier: FeedSubscription] = [:]
        var running = false
    }

    private let interval: Duration
    private let state = Mutex(State())

    init(seconds: Double) {
        interval = .milliseconds(Int64(max(seconds, 0.01) * 1000))
    }

    func register(_ subscription: FeedSubscription) {
        let start = state.withLock { state -> Bool in
            state.subscriptions[ObjectIdentifier(subscription)] = subscription
            if state.running { return false }
            state.running = true
            return true
        }
        if start {
            Task.detached { [self] in await self.run() }
        }
    }

    func unregister(_ subscription: FeedSubscription) {
        _ = state.withLock { $0.subscriptions.removeValue(forKey: ObjectIdentifier(subscription)) }
    }

    private func run() async {
        while true {
            try? await Task.sleep(for: interval)
            let subscriptions = state.withLock { state -> [FeedSubscription] in
                if state.subscriptions.isEmpty { state.running = false }
                return Array(state.subscriptions.values)
            }
            if subscriptions.isEmpty { return }
            for subscription in subscriptions { subscription.deliver(.heartbeat) }
        }
    }
}
