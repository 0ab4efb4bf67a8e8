import FiregateModel
import FiregateStore

/// One namespace's tree: the whole value in memory (reads never touch storage), its writes
/// applied one at a time, and the stream groups watching it.
///
/// The tree is loaded from storage on first use. Every write is applied in memory, queued for
/// durable storage in the same order, and fanned out to the streams it touches before the
/// actor takes the next message.
actor TreeNamespace {
    let name: String
    private let storage: any TreeStorage
    private let queue: TreeWriteQueue
    private let settings: TreeStreamSettings
    private var root = TreeNode.empty
    private var loaded = false
    private var groups: [TreeStreamKey: TreeStreamGroup] = [:]
    /// Counts writes that reached streams, so a new stream skips the deferred events of writes
    /// its first frame already holds.
    private var writeSequence: Int64 = 0
    /// Encodings of recently read locations, readable without the actor.
    nonisolated let encoded = TreeEncodedCache()

    init(name: String, storage: any TreeStorage, queue: TreeWriteQueue, settings: TreeStreamSettings) {
        self.name = name
        self.storage = storage
        self.queue = queue
        self.settings = settings
    }

    private func load() throws {
        guard !loaded else { return }
        root = TreeStorageEncoding.tree(from: try storage.loadRows(namespace: name))
        loaded = true
    }

    func read(_ path: TreePath) throws -> TreeNode {
        try load()
        return root.node(at: path)
    }

    /// The value at `path` as compact plain JSON (what a bare GET answers), from the cache
    /// when nothing changed there since the last read.
    func readEncoded(_ path: TreePath) throws -> [UInt8] {
        try load()
        if let bytes = encoded.get(path) { return bytes }
        let bytes = TreeNodeWriter.bytes(root.node(at: path))
        encoded.set(path, bytes)
        return bytes
    }

    private func invalidateEncoded(_ change: TreePath) { encoded.invalidate(change) }

    /// Applies `request`; the returned durability resolves once it is on disk.
    func write(_ request: TreeWriteRequest, nowMillis: Int64, pushID: @Sendable () -> String,
               judge: (any TreeWriteJudge)? = nil) throws -> (TreeWriteOutcome, TreeDurability) {
        try load()
        switch request.operation {
        case .set(let value):
            let node = try resolve(value, at: request.path, nowMillis: nowMillis)
            if request.path.isPriority {
                guard node.isEmpty || node.leaf?.isValidPriority == true else {
                    throw FiregateError.invalidArgument("Invalid data; priority must be a string, a number or null.")
                }
            }
            if let expected = request.ifMatch {
                let current = root.node(at: request.path)
                let etag = TreeETag.of(current)
                guard etag == expected else { return (.conflict(current: current, etag: etag), .done()) }
            }
            if let expected = request.ifSDKHash {
                let current = root.node(at: request.path)
                let hash = TreeSDKHash.of(current)
                guard hash == expected else { return (.conflict(current: current, etag: hash), .done()) }
            }
            if let judge { try self.judge(judge, writing: [(request.path, node)]) }
            return set(node, at: request.path, wantsETag: request.wantsETag || request.ifMatch != nil, pushKey: nil, checks: request)
        case .push(let value):
            let key = pushID()
            let path = request.path.appending(key)
            let node = try resolve(value, at: path, nowMillis: nowMillis)
            if let judge { try self.judge(judge, writing: [(path, node)]) }
            return set(node, at: path, wantsETag: request.wantsETag, pushKey: key, checks: request)
        case .update(let entries):
            return try update(entries, at: request.path, nowMillis: nowMillis, judge: judge, checks: request)
        }
    }

    private func resolve(_ value: TreeWriteValue, at path: TreePath, nowMillis: Int64) throws -> TreeNode {
        switch value {
        case .node(let node): return node
        case .needsServerValues(let json):
            let snapshot = root
            let serverValues = TreeServerValues(nowMillis: nowMillis, current: { snapshot.node(at: $0) })
            return try TreeNodeDecoder.decode(json, at: path, serverValues: serverValues)
        }
    }

    /// `checks`: the request whose progress and receipt are stored with the write.
    private func set(_ node: TreeNode, at path: TreePath, wantsETag: Bool, pushKey: String?,
                     checks: TreeWriteRequest) -> (TreeWriteOutcome, TreeDurability) {
        let nodePath = path.isPriority ? path.parent! : path
        let befores = valuesBefore(changeAt: nodePath)
        let previous = root.node(at: nodePath)
        root.set(node, at: path)
        invalidateEncoded(nodePath)
        let stored = root.node(at: nodePath)
        let operations = path.isPriority
            ? TreeStorageEncoding.operations(refreshingOwnRowAt: nodePath, in: root)
            : TreeStorageEncoding.operations(replacing: [path], in: root)
        let change = TreeChange(path: nodePath, operation: .set(stored))
        let delivery = !path.isPriority || previous != stored ? fanOut(change, befores: befores) : nil
        let result = TreeWriteResult(path: nodePath, value: path.isPriority ? stored.priorityNode : stored, entries: [],
                                     pushKey: pushKey, etag: wantsETag ? TreeETag.of(root.node(at: path)) : nil)
        let durability = queue.enqueue(storageBatch(operations, change, answering: result, checks: checks), delivery: delivery)
        return (.written(result), durability)
    }

    /// What a write stores: its rows, its change for the log, and what `checks` carries.
    private func storageBatch(_ operations: [TreeStorageOperation], _ change: TreeChange, answering result: TreeWriteResult,
                              checks: TreeWriteRequest) -> TreeStorageBatch {
        var receipt = checks.receipt
        receipt?.answer = JSONWriter.bytes(TreeWriteWire.outcome(.written(result)))
        return TreeStorageBatch(namespace: name, operations: operations, change: change.json, progress: checks.progress, receipt: receipt)
    }

    /// Asks `judge` about `writes` (each a location and its new node) against the tree as they
    /// would leave it, before anything changes.
    private func judge(_ judge: any TreeWriteJudge, writing writes: [(TreePath, TreeNode)]) throws(FiregateError) {
        var after = root
        for (path, node) in writes { after.set(node, at: path) }
        try judge.judge(writes.map { $0.0.isPriority ? $0.0.parent! : $0.0 }, before: root, after: after)
    }

    /// Judges `request` as a write without making it (an onDisconnect operation at registration).
    func check(_ request: TreeWriteRequest, nowMillis: Int64, judge: any TreeWriteJudge) throws {
        try load()
        switch request.operation {
        case .set(let value), .push(let value):
            try self.judge(judge, writing: [(request.path, try resolve(value, at: request.path, nowMillis: nowMillis))])
        case .update(let entries):
            var writes: [(TreePath, TreeNode)] = []
            for entry in entries {
                let target = request.path.appending(entry.path)
                writes.append((target, try resolve(entry.value, at: target, nowMillis: nowMillis)))
            }
            try self.judge(judge, writing: writes)
        }
    }

    /// The whole tree as it is now, for judging a read.
    func snapshot() throws -> TreeNode {
        try load()
        return root
    }

    private func update(_ entries: [TreeUpdateEntry], at path: TreePath, nowMillis: Int64,
                        judge: (any TreeWriteJudge)?, checks: TreeWriteRequest) throws -> (TreeWriteOutcome, TreeDurability) {
        let sorted = entries.map(\.path).sorted { $0.keys.lexicographicallyPrecedes($1.keys) }
        for (a, b) in zip(sorted, sorted.dropFirst()) where a.contains(b) {
            throw TreeUpdateEntry.overlapError(a, b)
        }
        var resolved: [TreePatchEntry] = []
        resolved.reserveCapacity(entries.count)
        for entry in entries {
            let target = path.appending(entry.path)
            guard target.count <= TreeKey.maxDepth + (target.isPriority ? 1 : 0) else {
                throw FiregateError.invalidArgument("Invalid data; data is nested too deeply (more than \(TreeKey.maxDepth) levels from the root).")
            }
            resolved.append(TreePatchEntry(path: entry.path, node: try resolve(entry.value, at: target, nowMillis: nowMillis)))
        }
        for entry in resolved where entry.path.isPriority {
            guard entry.node.isEmpty || entry.node.leaf?.isValidPriority == true else {
                throw FiregateError.invalidArgument("Invalid data; priority must be a string, a number or null.")
            }
        }
        guard !resolved.isEmpty else {
            return (.written(TreeWriteResult(path: path, value: root.node(at: path), entries: [], pushKey: nil, etag: nil)), .done())
        }
        if let judge { try self.judge(judge, writing: resolved.map { (path.appending($0.path), $0.node) }) }
        let befores = valuesBefore(changeAt: path)
        var replaced: [TreePath] = []
        var operations: [TreeStorageOperation] = []
        for entry in resolved {
            let target = path.appending(entry.path)
            root.set(entry.node, at: target)
            invalidateEncoded(target.isPriority ? target.parent! : target)
            if target.isPriority {
                operations += TreeStorageEncoding.operations(refreshingOwnRowAt: target.parent!, in: root)
            } else {
                replaced.append(target)
            }
        }
        operations = TreeStorageEncoding.operations(replacing: replaced, in: root) + operations
        let change = TreeChange(path: path, operation: .merge(resolved))
        let delivery = fanOut(change, befores: befores)
        let result = TreeWriteResult(path: path, value: root.node(at: path), entries: resolved, pushKey: nil, etag: nil)
        let durability = queue.enqueue(storageBatch(operations, change, answering: result, checks: checks), delivery: delivery)
        return (.written(result), durability)
    }

    /// The current values of the stream locations strictly below `path` (a change there may
    /// leave them unchanged, which streams must not hear about).
    private func valuesBefore(changeAt path: TreePath) -> [TreeStreamKey: TreeNode] {
        var befores: [TreeStreamKey: TreeNode] = [:]
        for key in groups.keys where key.query == nil && key.path.count > path.count && path.contains(key.path) {
            befores[key] = root.node(at: key.path)
        }
        return befores
    }

    /// The events `change` gives the streams it touches, to send once it is durable.
    private func fanOut(_ change: TreeChange, befores: [TreeStreamKey: TreeNode]) -> TreeDelivery? {
        writeSequence += 1
        var frames: [(TreeStreamSubscription, [TreeStreamFrame])] = []
        for (key, group) in groups where change.touches(key.path) {
            frames += group.apply(change, before: befores[key] ?? .empty, root: root)
        }
        guard !frames.isEmpty else { return nil }
        return TreeDelivery(sequence: writeSequence, frames: frames, overflow: { [self] subscription in
            Task { await self.resync(subscription) }
        })
    }

    private func resync(_ subscription: TreeStreamSubscription) {
        groups[subscription.key]?.resync(subscription, root: root)
    }

    /// Opens a stream; `forward` (for subscribers inside the server) receives its frames
    /// directly instead of queueing them.
    func subscribe(_ key: TreeStreamKey, identity: CallIdentity, forward: (@Sendable (TreeStreamFrame) -> Void)? = nil) throws -> TreeStreamSubscription {
        try load()
        let subscription = TreeStreamSubscription(namespace: name, key: key, maxBufferedBytes: settings.maxBufferedBytes, identity: identity,
                                                  forward: forward)
        subscription.startSequence.withLock { $0 = writeSequence }
        let group = groups[key] ?? TreeStreamGroup(key: key, root: root)
        if group.add(subscription, root: root, maxSnapshotBytes: settings.maxSnapshotBytes) {
            groups[key] = group
        }
        return subscription
    }

    /// Ends the streams whose readers the current rules no longer let read.
    func rejudgeStreams(rules: SecurityRules) {
        for (key, group) in groups {
            for subscription in Array(group.subscriptions.values) {
                let caller = RulesCaller(identity: subscription.identity, surface: subscription.forward == nil ? "sse" : "websocket")
                guard let judge = rules.treeJudge(name, caller: caller), !judge.allowsRead(key.path, query: key.query, root: root) else { continue }
                subscription.finish(after: .cancel("Permission denied"))
                group.remove(subscription)
            }
            if group.isEmpty { groups.removeValue(forKey: key) }
        }
    }

    func unsubscribe(_ subscription: TreeStreamSubscription) {
        guard let group = groups[subscription.key] else { return }
        group.remove(subscription)
        if group.isEmpty { groups.removeValue(forKey: subscription.key) }
    }

    /// Queues a keep-alive on every open stream (dropped for a stream whose buffer is full).
    func keepAlive() {
        for group in groups.values {
            for subscription in group.subscriptions.values { _ = subscription.offer(.keepAlive) }
        }
    }

    /// Applies a write another replica made (from the shared store's log) and tells the streams
    /// at once (it is durable already). A namespace not in memory skips it: its next load reads
    /// the store.
    func applyReplicated(_ change: TreeChange) {
        guard loaded else { return }
        let befores = valuesBefore(changeAt: change.path)
        switch change.operation {
        case .set(let node):
            root.set(node, at: change.path)
            invalidateEncoded(change.path)
        case .merge(let entries):
            for entry in entries {
                let target = change.path.appending(entry.path)
                root.set(entry.node, at: target)
                invalidateEncoded(target.isPriority ? target.parent! : target)
            }
        }
        fanOut(change, befores: befores)?.run()
    }

    /// Forgets the in-memory tree after a write failed to reach storage, so the next access
    /// reloads what is durable; open streams are cancelled since what they were told may be gone.
    func discardAfterStorageFailure() {
        loaded = false
        root = .empty
        encoded.removeAll()
        cancelStreams(with: .cancel("The database was reloaded after a storage failure; reconnect."))
    }

    func cancelStreams(with frame: TreeStreamFrame) {
        for group in groups.values { group.cancelAll(with: frame) }
        groups.removeAll()
    }

    /// Number of open streams and of groups they share work in.
    func streamCounts() -> (streams: Int, groups: Int) {
        (groups.values.reduce(0) { $0 + $1.subscriptions.count }, groups.count)
    }
}
