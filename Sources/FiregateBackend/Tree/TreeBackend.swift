import FiregateModel
import Foundation
import FiregateStore
import Synchronization

/// The Realtime-Database-style JSON tree: one `TreeNamespace` per namespace (namespaces never
/// see each other's data), a shared durable write queue, push ids, and the keep-alive ticker
/// of all streams.
public final class TreeBackend: Sendable {
    public static let migrations: [StoreMigration] = SQLiteTreeStorage.migrations

    public let settings: TreeStreamSettings
    private let storage: any TreeStorage
    private let clock: ServerClock
    private let operations: OperationsLog?
    private let queue: TreeWriteQueue
    private let namespaces = Mutex<[String: TreeNamespace]>([:])
    private let aliases = Mutex<[String: String]>([:])
    private let pushIDs = Mutex(PushIDGenerator())
    private let tickerStarted = Mutex(false)
    /// On replicas: where a write goes when another replica owns its namespace.
    public let remoteWrites = RemoteTreeWrites()

    public convenience init(store: SQLiteStore, clock: ServerClock, operations: OperationsLog? = nil) async throws {
        self.init(storage: SQLiteTreeStorage(store: store), clock: clock, settings: .fromEnvironment(), operations: operations)
    }

    public init(storage: any TreeStorage, clock: ServerClock, settings: TreeStreamSettings = TreeStreamSettings(), operations: OperationsLog? = nil) {
        self.storage = storage
        self.clock = clock
        self.operations = operations
        self.settings = settings
        queue = TreeWriteQueue(storage: storage)
        // Writes other replicas make (a store shared through PostgreSQL), applied in log order:
        // the store's follower waits for each before it hands over the next.
        storage.follow { [weak self] namespace, json in
            guard let self else { return }
            // `{"reload":true}`: this replica fell behind the log's window; read the store again.
            let change = json["reload"] == nil ? try? TreeChange(json: json) : nil
            let applied = DispatchSemaphore(value: 0)
            Task {
                let target = self.namespace(namespace)
                if let change { await target.applyReplicated(change) } else { await target.discardAfterStorageFailure() }
                applied.signal()
            }
            applied.wait()
        }
    }

    /// Namespace names: 1–128 letters, digits, `-`, `_` or `.`.
    public static func validateNamespace(_ name: String) throws(FiregateError) {
        let valid = !name.isEmpty && name.utf8.count <= 128 && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."): true
            default: false
            }
        }
        guard valid else { throw FiregateError.invalidArgument("Invalid namespace \"\(name)\": use 1–128 letters, digits, '-', '_' or '.'.") }
    }

    /// Makes `alias` another name of `canonical`: reads, writes and streams on either reach one
    /// namespace. `firegate exec` names `<project>-default-rtdb` so (client SDKs use it, the
    /// Admin SDK and rules-unit-testing `<project>`; docs/firebase-cli.md). Set before serving.
    public func alias(_ alias: String, to canonical: String) {
        aliases.withLock { $0[alias] = canonical }
    }

    /// The namespace a name reaches (itself unless it is an alias).
    public func canonicalName(_ name: String) -> String {
        aliases.withLock { $0[name] } ?? name
    }

    func namespace(_ requested: String) -> TreeNamespace {
        let name = canonicalName(requested)
        return namespaces.withLock { namespaces in
            if let existing = namespaces[name] { return existing }
            let created = TreeNamespace(name: name, storage: storage, queue: queue, settings: settings)
            namespaces[name] = created
            return created
        }
    }

    /// Judges a write without making it: throws what `judge` throws.
    public func check(namespace: String, _ request: TreeWriteRequest, judge: any TreeWriteJudge) async throws {
        try await self.namespace(namespace).check(request, nowMillis: clock.nowMicros() / 1000, judge: judge)
    }

    /// The whole namespace as it is now (a copy-on-write value), for judging reads.
    public func snapshot(namespace: String) async throws -> TreeNode {
        try await self.namespace(namespace).snapshot()
    }

    /// The value at `path` (empty when absent), from memory.
    public func read(namespace: String, path: TreePath) async throws -> TreeNode {
        try await self.namespace(namespace).read(path)
    }

    /// The value at `path` as compact JSON (`null` when absent), cached between changes.
    public func readEncoded(namespace: String, path: TreePath) async throws -> [UInt8] {
        try await self.namespace(namespace).readEncoded(path)
    }

    /// The cached encoding of `path` when a read since its last change left one, without
    /// waiting on the namespace (the HTTP fast path's lookup); nil means ask `readEncoded`.
    public func cachedEncoding(namespace: String, path: TreePath) -> [UInt8]? {
        namespaces.withLock { $0[namespace] }?.encoded.get(path)
    }

    /// Applies a write and returns once it is durable.
    /// `judge`, when given, sees the write against the tree it would leave, before anything changes.
    /// On replicas, when another replica owns the namespace, a write with `forwardingAs` runs
    /// there, judged as that caller's; one without it (a REST write, already at the owner) is
    /// refused UNAVAILABLE.
    public func write(namespace: String, _ request: TreeWriteRequest, judge: (any TreeWriteJudge)? = nil,
                      forwardingAs caller: RulesCaller? = nil) async throws -> TreeWriteOutcome {
        // Another replica owns it: refused before memory changes (the fence would refuse it
        // after, and dropping the memory would end this replica's streams).
        if let refusal = storage.writeRefusal(namespace: namespace) {
            guard let caller else { throw refusal }
            if let outcome = try await remoteWrites.write(namespace: namespace, request, as: caller) { return outcome }
            // The owner's lease ran out meanwhile: this replica may take the namespace.
            if let refusal = storage.writeRefusal(namespace: namespace) { throw refusal }
        }
        // A receipt travels with a write sent to the owner; written here, a write that could
        // have gone there leaves its client's queue as it does on one replica.
        var request = request
        if caller != nil { request.receipt = nil }
        let now = clock.nowMicros() / 1000
        let target = self.namespace(namespace)
        let (outcome, durability) = try await target.write(request, nowMillis: now, pushID: { [self] in nextPushID() }, judge: judge)
        do {
            try await durability.wait()
        } catch {
            // Memory is ahead of the disk now: drop it so the next access reloads what is stored.
            await target.discardAfterStorageFailure()
            throw FiregateError.unavailable("The write could not be stored: \(error)")
        }
        if case .written(let result) = outcome {
            operations?.record(.treeWrite(namespace: namespace, path: result.path.description, op: request.operation.name))
        }
        return outcome
    }

    /// A fresh push id, strictly greater than every one handed out before.
    public func nextPushID() -> String {
        let now = clock.nowMicros() / 1000
        return pushIDs.withLock { $0.next(nowMillis: now) }
    }

    /// Opens a stream; its first frame is the `put` of the current value. Events of a write
    /// are sent once it is durable.
    /// `identity` is who reads, for judging the stream again when the rules change.
    public func subscribe(namespace: String, key: TreeStreamKey, identity: CallIdentity = .unauthenticated) async throws -> TreeStreamSubscription {
        startKeepAlives()
        return try await self.namespace(namespace).subscribe(key, identity: identity)
    }

    /// Opens a stream for a subscriber inside the server (an edge client): `forward` receives
    /// its frames in the order the namespace produced them — across all of that subscriber's
    /// streams of the namespace — and before the writes they carry are reported durable.
    public func subscribe(namespace: String, key: TreeStreamKey, identity: CallIdentity = .unauthenticated,
                          forward: @escaping @Sendable (TreeStreamFrame) -> Void) async throws -> TreeStreamSubscription {
        try await self.namespace(namespace).subscribe(key, identity: identity, forward: forward)
    }

    /// After the rules of `namespace` (nil: all) changed: every stream its reader may no longer
    /// read ends with `cancel` ("Permission denied"), as production revokes a listen.
    public func rejudgeStreams(namespace: String?, rules: SecurityRules) async {
        let targets = namespaces.withLock { all in namespace.map { name in all[name].map { [$0] } ?? [] } ?? Array(all.values) }
        for target in targets { await target.rejudgeStreams(rules: rules) }
    }

    /// Closes a stream: it stops receiving events.
    public func unsubscribe(_ subscription: TreeStreamSubscription) async {
        subscription.finish()
        await namespace(subscription.namespace).unsubscribe(subscription)
    }

    /// Every namespace that holds data (stored or written since start), sorted.
    public func namespaceNames() async throws -> [String] {
        var names = Set(try storage.namespaces())
        for (name, namespace) in namespaces.withLock({ $0 }) where try await !namespace.read(.root).isEmpty {
            names.insert(name)
        }
        return names.sorted()
    }

    /// Deletes every namespace's data, durably; open streams see their locations become null.
    public func reset() async throws {
        for name in try await namespaceNames() {
            _ = try await write(namespace: name, TreeWriteRequest(path: .root, operation: .set(.node(.empty))))
        }
    }

    /// Ends every stream open on `namespace` with a `cancel` event carrying `reason` — what a
    /// stream gets when its location stops being readable to it.
    public func cancelStreams(namespace: String, reason: String) async {
        await self.namespace(namespace).cancelStreams(with: .cancel(reason))
    }

    /// Ends every open stream of every namespace with `cancel`.
    public func cancelAllStreams(reason: String) async {
        for namespace in namespaces.withLock({ Array($0.values) }) {
            await namespace.cancelStreams(with: .cancel(reason))
        }
    }

    /// Open streams and the groups they share work in, over all namespaces.
    public func streamCounts() async -> (streams: Int, groups: Int) {
        let all = namespaces.withLock { Array($0.values) }
        var total = (streams: 0, groups: 0)
        for namespace in all {
            let counts = await namespace.streamCounts()
            total.streams += counts.streams
            total.groups += counts.groups
        }
        return total
    }

    private func startKeepAlives() {
        let start = tickerStarted.withLock { started -> Bool in
            defer { started = true }
            return !started
        }
        guard start else { return }
        let interval = settings.keepAliveInterval
        Task { [weak self] in
            while true {
                try? await Task.sleep(for: interval)
                guard let self else { return }
                let all = self.namespaces.withLock { Array($0.values) }
                for namespace in all { await namespace.keepAlive() }
            }
        }
    }
}
