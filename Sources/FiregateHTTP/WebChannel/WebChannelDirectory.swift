import FiregateModel
import FiregateWebChannel
import ServiceLifecycle
import Synchronization

/// The open WebChannel sessions by id. A session the client stops using — no back channel and
/// no request for `idleTimeout` — expires; one whose stream ended is kept `endedGrace` for its
/// back channel to read the last arrays (an in-band error, a `stop`), then forgotten. A later
/// request for a forgotten session gets 400 "Unknown SID", which the client takes as fatal.
final class WebChannelDirectory: Sendable {
    static let idleTimeout: Duration = .seconds(60)
    static let endedGrace: Duration = .seconds(30)
    /// Most sessions open at once: a page that leaks channels is refused, not the server.
    static let limit = 50_000

    private struct State {
        var streams: [String: WebChannelStream] = [:]
        var sweeper: Task<Void, Never>?
    }

    private let state = Mutex(State())

    var count: Int { state.withLock { $0.streams.count } }

    func stream(_ id: String) -> WebChannelStream? { state.withLock { $0.streams[id] } }

    /// Adds a session; false at the limit.
    func add(_ stream: WebChannelStream) -> Bool {
        state.withLock { state in
            guard state.streams.count < WebChannelDirectory.limit else { return false }
            state.streams[stream.session.id] = stream
            if state.sweeper == nil {
                // Started from a request, it hears the server's graceful shutdown: Listen
                // sessions then end UNAVAILABLE in-band, and their clients reconnect.
                state.sweeper = Task { [weak self] in
                    await withGracefulShutdownHandler {
                        while let self, self.sweep(now: .now) {
                            try? await Task.sleep(for: .seconds(5))
                        }
                    } onGracefulShutdown: { [weak self] in
                        self?.shutDown()
                    }
                }
            }
            return true
        }
    }

    /// The server is shutting down: every stream ends UNAVAILABLE.
    func shutDown() {
        for stream in state.withLock({ Array($0.streams.values) }) {
            stream.end(.unavailable("The server is shutting down."))
        }
    }

    /// The client terminated the session.
    func terminate(_ id: String) {
        guard let stream = state.withLock({ $0.streams.removeValue(forKey: id) }) else { return }
        stream.session.end(.closed)
        stream.end(nil)
    }

    /// Expires idle sessions and forgets ended ones; false when none is left (the sweeper stops,
    /// and the next session starts another).
    func sweep(now: ContinuousClock.Instant) -> Bool {
        let (expired, more) = state.withLock { state -> ([WebChannelStream], Bool) in
            var expired: [WebChannelStream] = []
            for (id, stream) in state.streams {
                let (lastSeen, open) = stream.session.activity
                if stream.session.ending != nil {
                    if now - lastSeen > WebChannelDirectory.endedGrace, !open { state.streams.removeValue(forKey: id) }
                } else if !open, now - lastSeen > WebChannelDirectory.idleTimeout {
                    state.streams.removeValue(forKey: id)
                    expired.append(stream)
                }
            }
            if state.streams.isEmpty { state.sweeper = nil }
            return (expired, !state.streams.isEmpty)
        }
        for stream in expired {
            stream.session.end(.closed)
            stream.end(.cancelled("The channel expired: no request for \(WebChannelDirectory.idleTimeout)."))
        }
        return more
    }

    /// New session ids: 22 URL-safe characters, like the emulator's.
    static func sessionID() -> String {
        AutoID.make() + String(AutoID.make().prefix(2))
    }
}
