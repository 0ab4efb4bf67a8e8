import CoreMetrics
import FiregateBackend
import FiregateModel
import HTTPTypes
import NIOCore
import Synchronization

/// The HTTP/2 connections gRPC calls arrive on. Each project/database a connection addresses is
/// one entry of the connections registry (DESIGN §1.6): a switch that takes it offline ends
/// that scope's streams with UNAVAILABLE and refuses its new calls, leaving the connection's
/// other scopes alone.
final class GRPCConnections: Sendable {
    let registry: ConnectionRegistry
    let metrics: ServerMetrics
    private let open = Mutex<[ObjectIdentifier: GRPCConnection]>([:])

    /// The event-loop path's calls that end OK, counted without a lookup.
    private let succeeded: [GRPCFastPath.Method: CoreMetrics.Counter]

    init(registry: ConnectionRegistry, metrics: ServerMetrics) {
        self.registry = registry
        self.metrics = metrics
        succeeded = Dictionary(uniqueKeysWithValues: [GRPCFastPath.Method.getDocument, .commit, .listen].map {
            ($0, metrics.grpcCallCounter(method: $0.rawValue, code: "OK"))
        })
    }

    /// Counts a finished call by method and status (`/metrics`) and on its connection's entry
    /// (the dashboard); methods the service does not have are counted as "unknown".
    func finished(_ method: Substring, status: FiregateError?, ticket: GRPCCallTicket?) {
        let name = FirestoreGRPCService.methods.contains(method) ? String(method) : "unknown"
        metrics.grpcCallFinished(method: name, code: status?.status.rawValue ?? "OK")
        if let ticket { registry.countCall(ticket.entryID, method: name) }
    }

    /// A call of the event-loop path finished (counted on its entry when admitted).
    func finished(_ method: GRPCFastPath.Method, status: FiregateError?) {
        if let status {
            metrics.grpcCallFinished(method: method.rawValue, code: status.status.rawValue)
        } else {
            succeeded[method]?.increment()
        }
    }

    /// The state of the connection a call's stream channel belongs to.
    func connection(of stream: any Channel) -> GRPCConnection {
        connection(ofConnection: stream.parent ?? stream)
    }

    /// The state of an HTTP/2 connection, from its own channel (the event-loop path's).
    func connection(ofConnection parent: any Channel) -> GRPCConnection {
        let key = ObjectIdentifier(parent)
        let (connection, created) = open.withLock { open -> (GRPCConnection, Bool) in
            if let existing = open[key] { return (existing, false) }
            let connection = GRPCConnection(registry: registry, peer: parent.remoteAddress.map { "\($0)" })
            open[key] = connection
            return (connection, true)
        }
        if created {
            parent.closeFuture.whenComplete { [weak self] _ in
                _ = self?.open.withLock { $0.removeValue(forKey: key) }
                connection.closeAll(reason: "the HTTP/2 connection closed")
            }
        }
        return connection
    }

    /// The database a call addresses, from the metadata every client sends
    /// (`google-cloud-resource-prefix`, else the routing header `x-goog-request-params`).
    static func scope(of headers: HTTPFields) -> DatabaseID? {
        scope(prefix: headers[HTTPField.Name("google-cloud-resource-prefix")!], params: headers[HTTPField.Name("x-goog-request-params")!])
    }

    static func scope(prefix: String?, params: String?) -> DatabaseID? {
        if let prefix, let id = try? FirestoreResourceName.database(prefix) { return id }
        guard let params else { return nil }
        for pair in params.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, ["database", "name", "parent"].contains(parts[0]),
                  let value = try? PercentDecoding.decode(String(parts[1])) else { continue }
            let name = value.split(separator: "/").prefix(4).joined(separator: "/")
            if let id = try? FirestoreResourceName.database(name) { return id }
        }
        return nil
    }
}

/// One HTTP/2 connection's scopes and the calls running in each.
final class GRPCConnection: Sendable {
    private struct Scope {
        let entryID: String
        var calls: [Int: GRPCCallTicket] = [:]
    }

    private struct State {
        var scopes: [DatabaseID: Scope] = [:]
        var nextCall = 0
    }

    let registry: ConnectionRegistry
    let peer: String?
    private let state = Mutex(State())

    init(registry: ConnectionRegistry, peer: String?) {
        self.registry = registry
        self.peer = peer
    }

    typealias Caller = () -> (appID: String?, userAgent: String?, identity: CallIdentity)

    /// Admits a call on `scope`, opening its registry entry on first use (described by `caller`,
    /// read only then); nil while a network switch holds the scope offline.
    func begin(_ scope: DatabaseID, caller: Caller) -> GRPCCallTicket? {
        state.withLock { state -> GRPCCallTicket? in
            guard let entryID = entry(scope, in: &state, caller: caller) else { return nil }
            state.nextCall += 1
            let ticket = GRPCCallTicket(registry: registry, entryID: entryID, connection: self, scope: scope, number: state.nextCall)
            state.scopes[scope]!.calls[state.nextCall] = ticket
            return ticket
        }
    }

    /// The registry entry of `scope` for a call that needs no ticket (a unary call answered on
    /// the event loop, which nothing ends early); nil while a switch holds the scope offline.
    func entry(_ scope: DatabaseID, caller: Caller) -> String? {
        state.withLock { state in entry(scope, in: &state, caller: caller) }
    }

    /// Whether `entryID` is still `scope`'s entry: a drop closes it, and a call admitted before
    /// then ends UNAVAILABLE, as its connection would have.
    func isOpen(_ scope: DatabaseID, entryID: String) -> Bool {
        state.withLock { $0.scopes[scope]?.entryID == entryID }
    }

    private func entry(_ scope: DatabaseID, in state: inout State, caller: Caller) -> String? {
        if let existing = state.scopes[scope]?.entryID { return existing }
        let (appID, userAgent, identity) = caller()
        let info = ConnectionInfo(protocol: "firestore-grpc", appId: appID, userAgent: userAgent, peer: peer,
                                  project: scope.project, database: scope.database, namespace: nil, uid: identity.uid)
        guard let entryID = registry.open(info, drop: { [weak self] error in self?.drop(scope, error) }) else { return nil }
        state.scopes[scope] = Scope(entryID: entryID)
        return entryID
    }

    func end(_ ticket: GRPCCallTicket) {
        state.withLock { state in _ = state.scopes[ticket.scope]?.calls.removeValue(forKey: ticket.number) }
    }

    /// Ends every call of a scope with `error` and closes its entry; the next call opens a new one.
    private func drop(_ scope: DatabaseID, _ error: FiregateError) {
        guard let removed = state.withLock({ $0.scopes.removeValue(forKey: scope) }) else { return }
        registry.close(removed.entryID, reason: error.message)
        for ticket in removed.calls.values { ticket.terminate(error) }
    }

    func closeAll(reason: String) {
        let scopes = state.withLock { state in
            defer { state.scopes.removeAll() }
            return state.scopes
        }
        for scope in scopes.values {
            registry.close(scope.entryID, reason: reason)
            for ticket in scope.calls.values { ticket.terminate(.unavailable(reason)) }
        }
    }
}

/// One running call's handle: how long its frames wait (the switch's latency), and how a switch
/// or drop ends it (the call installs the hook that makes its stream end UNAVAILABLE).
final class GRPCCallTicket: Sendable {
    let registry: ConnectionRegistry
    let entryID: String
    let scope: DatabaseID
    let number: Int
    private weak let connection: GRPCConnection?
    private let termination = Mutex<(hook: (@Sendable (FiregateError) -> Void)?, error: FiregateError?)>((nil, nil))
    private let listens = Mutex(0)

    init(registry: ConnectionRegistry, entryID: String, connection: GRPCConnection, scope: DatabaseID, number: Int) {
        self.registry = registry
        self.entryID = entryID
        self.connection = connection
        self.scope = scope
        self.number = number
    }

    var latency: Duration { registry.latency(entryID) }

    /// Waits the switch's latency, if any: once per frame, each way.
    func pace() async {
        let delay = latency
        if delay > .zero { try? await Task.sleep(for: delay) }
    }

    /// Runs `hook` when the call is terminated (at once if it already was).
    func onTerminate(_ hook: @escaping @Sendable (FiregateError) -> Void) {
        let already = termination.withLock { state -> FiregateError? in
            state.hook = hook
            return state.error
        }
        if let already { hook(already) }
    }

    var terminated: FiregateError? { termination.withLock { $0.error } }

    func terminate(_ error: FiregateError) {
        let hook = termination.withLock { state -> (@Sendable (FiregateError) -> Void)? in
            guard state.error == nil else { return nil }
            state.error = error
            return state.hook
        }
        hook?(error)
    }

    /// The open Listen targets of this call, counted in the entry's `listens`.
    func setListens(_ count: Int) {
        let delta = listens.withLock { current -> Int in
            defer { current = count }
            return count - current
        }
        if delta != 0 { registry.updateListens(entryID, by: delta) }
    }

    func end() {
        setListens(0)
        connection?.end(self)
    }
}
