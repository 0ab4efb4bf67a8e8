import FiregateBackend
import FiregateModel
import OrderedCollections
import Synchronization

/// What the registry can do to a connection, through its surface.
struct ConnectionControls: Sendable {
    /// End it now with this error (a switch or a test's drop).
    let drop: @Sendable (FiregateError) -> Void
    /// Revoke its credential (status, reason): sockets only.
    var revokeAuth: (@Sendable (String, String) -> Void)?
    /// The emulator was reset.
    var reset: (@Sendable () -> Void)?
}

/// Every real SDK connection and the network switches that apply to them (docs/architecture.md, Real SDK connections): the
/// one owner of that state. Surfaces open an entry when a connection (or, over HTTP/2, a
/// project/database on it) appears — refused while a switch holds it offline — and close it
/// when it ends; a switch or a drop ends the entry through the `drop` hook its surface gave.
final class ConnectionRegistry: Sendable {
    private struct Entry {
        var info: ConnectionInfo
        let controls: ConnectionControls
    }

    private struct State {
        var entries: OrderedDictionary<String, Entry> = [:]
        var switches: [NetworkSwitch] = []
        var nextID = 1
    }

    private let state = Mutex(State())
    /// Whether a switch adds latency: read without the lock by `latency`, which every
    /// back-channel write and frame asks (a fan-out's streams would all take the lock).
    private let delaying = Atomic<Bool>(false)
    let backend: Backend

    init(backend: Backend) {
        self.backend = backend
    }

    /// A fresh id, for a connection that needs it before it registers.
    func reserveID() -> String {
        state.withLock { state in
            defer { state.nextID += 1 }
            return "c\(state.nextID)"
        }
    }

    /// Registers a connection (under `info.id` if it reserved one); nil when an offline switch
    /// matches it (the caller refuses it).
    func open(_ info: ConnectionInfo, drop: @escaping @Sendable (FiregateError) -> Void) -> String? {
        open(info, controls: ConnectionControls(drop: drop))
    }

    func open(_ info: ConnectionInfo, controls: ConnectionControls) -> String? {
        let opened = state.withLock { state -> ConnectionInfo? in
            var info = info
            let fresh = info.id.isEmpty
            if fresh { info.id = "c\(state.nextID)" }
            guard !state.switches.contains(where: { !$0.online && $0.match.matches(info) }) else { return nil }
            if fresh { state.nextID += 1 }
            info.openedAt = backend.clock.now()
            state.entries[info.id] = Entry(info: info, controls: controls)
            return info
        }
        guard let opened else { return nil }
        backend.operations.record(.connection(id: opened.id, protocol: opened.protocol, opened: true, reason: nil))
        backend.timelines.open(kind: "connection", name: opened.id, protocol: opened.protocol, project: opened.project ?? opened.namespace,
                               appId: opened.appId, action: "opened")
        return opened.id
    }

    /// Whether a connection like `info` would be refused now.
    func isRefused(_ info: ConnectionInfo) -> Bool {
        state.withLock { state in state.switches.contains { !$0.online && $0.match.matches(info) } }
    }

    func close(_ id: String, reason: String) {
        guard let entry = state.withLock({ $0.entries.removeValue(forKey: id) }) else { return }
        backend.operations.record(.connection(id: id, protocol: entry.info.protocol, opened: false, reason: reason))
        backend.timelines.close(TimelineLane.connectionID(id), action: "closed", fields: [("reason", .string(reason))])
    }

    func updateListens(_ id: String, by delta: Int) {
        state.withLock { state in state.entries[id]?.info.listens += delta }
    }

    /// Counts a call the event loop answers at once, unless the entry's frames are delayed
    /// (false: the call takes the paced path, which counts it).
    func admitUndelayed(_ id: String, method: String) -> Bool {
        state.withLock { state in
            guard let info = state.entries[id]?.info else { return false }
            if !state.switches.isEmpty, state.switches.contains(where: { $0.latencyMs > 0 && $0.match.matches(info) }) { return false }
            state.entries[id]!.info.calls[method, default: 0] += 1
            return true
        }
    }

    func countCall(_ id: String, method: String) {
        state.withLock { state in state.entries[id]?.info.calls[method, default: 0] += 1 }
    }

    func setListens(_ id: String, _ count: Int) {
        state.withLock { state in state.entries[id]?.info.listens = count }
    }

    /// The connection authenticated as someone else (what `uid` switches match from now on).
    func setUID(_ id: String, _ uid: String?) {
        state.withLock { state in state.entries[id]?.info.uid = uid }
    }

    /// The delay every frame of this connection takes (the largest of the matching switches).
    func latency(_ id: String) -> Duration {
        guard delaying.load(ordering: .acquiring) else { return .zero }
        let ms = state.withLock { state -> Int in
            // Asked per frame and per back-channel write: most of the time no switch delays anything.
            guard state.switches.contains(where: { $0.latencyMs > 0 }), let info = state.entries[id]?.info else { return 0 }
            return state.switches.filter { $0.match.matches(info) }.map(\.latencyMs).max() ?? 0
        }
        return .milliseconds(ms)
    }

    var connections: [ConnectionInfo] { state.withLock { $0.entries.values.map(\.info) } }
    func connection(_ id: String) -> ConnectionInfo? { state.withLock { $0.entries[id]?.info } }
    var switches: [NetworkSwitch] { state.withLock { $0.switches } }

    /// Sets (or, when neutral, removes) the switch for its match; drops the connections it takes
    /// offline and returns their ids.
    func set(_ networkSwitch: NetworkSwitch) -> [String] {
        let dropped = state.withLock { state -> [Entry] in
            state.switches.removeAll { $0.match == networkSwitch.match }
            if !networkSwitch.isNeutral { state.switches.append(networkSwitch) }
            delaying.store(state.switches.contains { $0.latencyMs > 0 }, ordering: .releasing)
            guard !networkSwitch.online else {
                for entry in state.entries.values where networkSwitch.latencyMs > 0 && networkSwitch.match.matches(entry.info) {
                    backend.timelines.recorder(TimelineLane.connectionID(entry.info.id))
                        .record(.network, [("online", .bool(true)), ("latencyMs", .int(Int64(networkSwitch.latencyMs)))])
                }
                return []
            }
            return state.entries.values.filter { networkSwitch.match.matches($0.info) }
        }
        for entry in dropped { backend.timelines.recorder(TimelineLane.connectionID(entry.info.id)).network(online: false, cause: "networkSwitch") }
        for entry in dropped { entry.controls.drop(.unavailable("The connection was taken offline by a Firegate network switch.")) }
        return dropped.map(\.info.id)
    }

    /// Drops one connection once; false when there is none with that id.
    func drop(_ id: String) -> Bool {
        guard let entry = state.withLock({ $0.entries[id] }) else { return false }
        backend.timelines.recorder(TimelineLane.connectionID(id)).network(online: false, cause: "drop")
        entry.controls.drop(.unavailable("The connection was dropped by the test (Firegate connections :drop)."))
        return true
    }

    /// Revokes the credential a connection authenticated with (RTDB's `ac`).
    func revokeAuth(_ id: String, status: String, reason: String) throws(FiregateError) {
        guard let entry = state.withLock({ $0.entries[id] }) else { throw .notFound("No connection \"\(id)\".") }
        guard let revoke = entry.controls.revokeAuth else {
            throw .failedPrecondition("Connection \"\(id)\" (\(entry.info.protocol)) has no credential to revoke: only rtdb-websocket connections do.")
        }
        revoke(status, reason)
    }

    /// The emulator was reset: every connection is told (sockets forget their onDisconnect
    /// operations and close, so nothing of before the reset is written after it).
    func reset() {
        for entry in state.withLock({ Array($0.entries.values) }) { entry.controls.reset?() }
    }

    /// Open connections by protocol, for `/metrics`.
    var countsByProtocol: [String: Int] {
        state.withLock { state in state.entries.values.reduce(into: [:]) { $0[$1.info.protocol, default: 0] += 1 } }
    }
}
