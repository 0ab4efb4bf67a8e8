import CoreMetrics
import FiregateBackend
import FiregateModel
import HTTPTypes
import NIOCore
import Synchronization

/// The HTTP/2 connections gRPC calls arrive on. Each caller on a connection — the database a
/// call names, with the call's app id and credential (`GRPCCaller`) — is one entry of the
/// connections registry: a switch that takes it offline ends that caller's streams with
/// UNAVAILABLE and refuses its new calls, leaving the connection's other callers alone.
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

    /// The database a call addresses: from its metadata, else from its first message (every
    /// Firestore request names its database, document or parent in field 1 — inside the
    /// document for UpdateDocument), which is read ahead and kept for the method.
    static func scope(of headers: HTTPFields, orFirstMessageOf requests: inout GRPCMessageReader) async -> DatabaseID? {
        if let scope = scope(of: headers) { return scope }
        guard let first = await requests.peek() else { return nil }
        return scope(ofMessage: first)
    }

    static func scope(ofMessage message: ByteBuffer) -> DatabaseID? {
        var bytes = message
        for _ in 0..<2 {
            guard let field = ProtobufFirstField.lengthDelimited(number: 1, in: bytes) else { return nil }
            if let name = field.getString(at: field.readerIndex, length: field.readableBytes), name.hasPrefix("projects/") {
                let database = name.split(separator: "/", omittingEmptySubsequences: false).prefix(4).joined(separator: "/")
                return try? FirestoreResourceName.database(database)
            }
            bytes = field  // UpdateDocumentRequest: the document, whose field 1 is its name
        }
        return nil
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

/// Who a call comes from on its connection: the database it names and its own metadata. grpc-js
/// puts every Firestore instance of a process on one connection, and each call carries its
/// instance's `x-firebase-gmpid` and `authorization`: each caller is an entry of its own, so a
/// switch matching one app or user ends and refuses that caller's calls only.
struct GRPCCaller: Hashable, Sendable {
    let database: DatabaseID
    let appID: String?
    let authorization: String?
    let userAgent: String?

    init(_ database: DatabaseID, appID: String?, authorization: String?, userAgent: String?) {
        self.database = database
        self.appID = appID.flatMap { $0.isEmpty ? nil : $0 }
        self.authorization = authorization
        self.userAgent = userAgent
    }

    // The user agent describes the entry; it does not tell callers apart (nor cost a hash per call).
    static func == (a: GRPCCaller, b: GRPCCaller) -> Bool {
        a.database == b.database && a.appID == b.appID && a.authorization == b.authorization
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(database)
        hasher.combine(appID)
        hasher.combine(authorization)
    }
}

/// One HTTP/2 connection's callers and the calls running for each.
final class GRPCConnection: Sendable {
    private struct Scope {
        let entryID: String
        var calls: [Int: GRPCCallTicket] = [:]
    }

    private struct State {
        var scopes: [GRPCCaller: Scope] = [:]
        var nextCall = 0
    }

    let registry: ConnectionRegistry
    let peer: String?
    private let state = Mutex(State())

    init(registry: ConnectionRegistry, peer: String?) {
        self.registry = registry
        self.peer = peer
    }

    /// Admits a call of `caller`, opening its registry entry on first use; nil while a network
    /// switch holds that caller offline.
    func begin(_ caller: GRPCCaller) -> GRPCCallTicket? {
        state.withLock { state -> GRPCCallTicket? in
            guard let entryID = entry(caller, in: &state) else { return nil }
            state.nextCall += 1
            let ticket = GRPCCallTicket(registry: registry, entryID: entryID, connection: self, caller: caller, number: state.nextCall)
            state.scopes[caller]!.calls[state.nextCall] = ticket
            return ticket
        }
    }

    /// The registry entry of `caller` for a call that needs no ticket (a unary call answered on
    /// the event loop, which nothing ends early); nil while a switch holds it offline.
    func entry(_ caller: GRPCCaller) -> String? {
        state.withLock { state in entry(caller, in: &state) }
    }

    /// Whether `entryID` is still `caller`'s entry: a drop closes it, and a call admitted before
    /// then ends UNAVAILABLE, as its connection would have.
    func isOpen(_ caller: GRPCCaller, entryID: String) -> Bool {
        state.withLock { $0.scopes[caller]?.entryID == entryID }
    }

    private func entry(_ caller: GRPCCaller, in state: inout State) -> String? {
        if let existing = state.scopes[caller]?.entryID { return existing }
        let identity = registry.backend.rules.admin.identity(authorization: caller.authorization)
        let info = ConnectionInfo(protocol: "firestore-grpc", appId: caller.appID, userAgent: caller.userAgent, peer: peer,
                                  project: caller.database.project, database: caller.database.database, namespace: nil, uid: identity.uid)
        guard let entryID = registry.open(info, drop: { [weak self] error in self?.drop(caller, error) }) else { return nil }
        state.scopes[caller] = Scope(entryID: entryID)
        return entryID
    }

    func end(_ ticket: GRPCCallTicket) {
        state.withLock { state in _ = state.scopes[ticket.caller]?.calls.removeValue(forKey: ticket.number) }
    }

    /// Ends every call of a caller with `error` and closes its entry; its next call opens a new one.
    private func drop(_ caller: GRPCCaller, _ error: FiregateError) {
        guard let removed = state.withLock({ $0.scopes.removeValue(forKey: caller) }) else { return }
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
    let caller: GRPCCaller
    let number: Int
    private weak let connection: GRPCConnection?
    private let termination = Mutex<(hook: (@Sendable (FiregateError) -> Void)?, error: FiregateError?)>((nil, nil))
    private let listens: ListenCount

    init(registry: ConnectionRegistry, entryID: String, connection: GRPCConnection, caller: GRPCCaller, number: Int) {
        self.registry = registry
        self.entryID = entryID
        listens = ListenCount(registry: registry, entryID: entryID)
        self.connection = connection
        self.caller = caller
        self.number = number
    }

    /// The database the call names.
    var scope: DatabaseID { caller.database }

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
        listens.set(count)
    }

    /// The call is over: it leaves its entry, and its termination hook is dropped (the hook
    /// holds the call, which holds this ticket — kept, both would outlive every ended call).
    func end() {
        setListens(0)
        termination.withLock { $0.hook = nil }
        connection?.end(self)
    }
}

/// Reads a protobuf message's field without decoding the message (to learn a call's database
/// before knowing the method's type).
enum ProtobufFirstField {
    /// The bytes of the first occurrence of length-delimited field `number`; nil if absent or
    /// the message is malformed up to it.
    static func lengthDelimited(number: Int, in message: ByteBuffer) -> ByteBuffer? {
        var bytes = message
        while bytes.readableBytes > 0 {
            guard let key = varint(&bytes) else { return nil }
            let (field, wireType) = (Int(key >> 3), key & 7)
            switch wireType {
            case 0: guard varint(&bytes) != nil else { return nil }
            case 1: guard bytes.readSlice(length: 8) != nil else { return nil }
            case 5: guard bytes.readSlice(length: 4) != nil else { return nil }
            case 2:
                guard let length = varint(&bytes), length <= UInt64(bytes.readableBytes),
                      let value = bytes.readSlice(length: Int(length)) else { return nil }
                if field == number { return value }
            default: return nil
            }
        }
        return nil
    }

    private static func varint(_ bytes: inout ByteBuffer) -> UInt64? {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 64, by: 7) {
            guard let byte = bytes.readInteger(as: UInt8.self) else { return nil }
            value |= UInt64(byte & 0x7f) << UInt64(shift)
            if byte & 0x80 == 0 { return value }
        }
        return nil
    }
}
