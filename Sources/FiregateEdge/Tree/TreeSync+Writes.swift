import FiregateBackend
import FiregateModel
import FiregateStore

/// Writes through the client: applied locally at once (latency compensation), stored
/// durably first when persistent, sent one at a time in order while connected, and
/// acknowledged or reverted when the server answers (docs/wire/realtime-database.md: Writes, Transactions).
extension TreeSync {
    public func write(_ request: TreeClientWrite) async throws(FiregateError) -> TreeWriteReceipt {
        begin()
        let local = LocalTreeValues(cache: cache, writes: writes, nowMillis: serverTimeMillis())
        var path: TreePath
        var pushKey: String?
        let change: TreeUserWrite.Change
        let wire: TreeUserWrite.Wire
        var committed: Bool?
        switch request {
        case .set(let location, let json):
            path = location
            change = .set(try local.decode(json, at: path))
            wire = .set(json)
        case .push(let location, let json):
            let key = pushIDs.next(nowMillis: serverTimeMillis())
            pushKey = key
            path = location.appending(key)
            change = .set(try local.decode(json, at: path))
            wire = .set(json)
        case .update(let location, let entries):
            path = location
            var applied: [TreePatchEntry] = []
            for (relative, json) in entries { applied.append(TreePatchEntry(path: relative, node: try local.decode(json, at: location.appending(relative)))) }
            guard !applied.isEmpty else {
                return TreeWriteReceipt(id: nil, path: path, pushKey: nil, value: localValue(at: path), entries: [], committed: nil)
            }
            change = .merge(applied)
            wire = .merge(entries)
        case .transaction(let location, let body):
            path = location
            var transaction = try TreeTransaction(json: body, at: location)
            transaction.pushKey = pushIDs.next(nowMillis: serverTimeMillis())
            guard let next = transaction.apply(to: localValue(at: location)) else {
                return TreeWriteReceipt(id: nil, path: path, pushKey: nil, value: localValue(at: path), entries: [], committed: false)
            }
            change = .set(next)
            wire = .transaction(transaction)
            committed = true
        }
        let id = nextWriteID
        nextWriteID += 1
        var write = TreeUserWrite(id: id, path: path, change: change, wire: wire, durable: !persistent)
        write.stamp = backend.clock.nowMicros()
        if !write.isTransaction { abortTransactions(touching: write) }
        writes.add(write)
        writeStates.pending(id, .pending)
        refreshViews(touching: write.touchedPaths)
        if persistent, let body = write.stored, let storage {
            do {
                try await storage.saveWrite(id: id, body: body)
            } catch {
                writes.remove(id)
                finish(id, .rejected(FiregateError(.unavailable, "The write could not be stored: \(error)")))
                refreshViews(touching: write.touchedPaths)
                throw FiregateError(.unavailable, "The write could not be stored: \(error)")
            }
        }
        write.durable = true
        writes.update(id) { $0.durable = true }
        timeline.writeQueued("t\(id)", documents: [path.description])
        pump()
        let entries: [TreePatchEntry] = if case .merge(let applied) = change { applied } else { [] }
        return TreeWriteReceipt(id: id, path: path, pushKey: pushKey, value: localValue(at: path), entries: entries, committed: committed)
    }

    /// A set or update touching a pending transaction's location aborts it (reason `set`).
    func abortTransactions(touching write: TreeUserWrite) {
        for pending in writes.writes where pending.isTransaction && !pending.sent && write.touches(pending.path) {
            writes.remove(pending.id)
            finish(pending.id, .rejected(FiregateError(.aborted, "set: the transaction was overridden by a later set or update.")))
        }
    }

    // MARK: Sending

    /// Sends the oldest unsent write if the connection, gates and auth allow.
    func pump() {
        guard started, connected, !link.holdWrites, !link.writesPaused, !sending else { return }
        guard let next = writes.writes.first(where: { !$0.sent }), next.durable else { return }
        sending = true
        writes.update(next.id) { $0.sent = true }
        Task { await self.sendAndContinue(next) }
    }

    private func sendAndContinue(_ write: TreeUserWrite) async {
        let outcome = await transmit(write)
        sending = false
        if let outcome {
            inputs.yield(outcome)
            pump()
        } else {
            // A transient failure: the write stays queued and is retried shortly.
            writes.update(write.id) { $0.sent = false }
            try? await Task.sleep(for: .milliseconds(500))
            pump()
        }
    }

    /// Hands one write to the backend. nil: a transient failure, retry later.
    func transmit(_ write: TreeUserWrite) async -> Input? {
        if let work = disconnectWork { await work.value }
        timeline.writeSent("t\(write.id)")
        // Judged with the identity the client has as it sends the write.
        let judge = rulesJudge()
        do {
            switch write.wire {
            case .set(let json):
                var request = TreeWriteRequest(path: write.path, operation: .set(try TreeWriteValue.prepare(json, at: write.path)))
                request.receipt = receipt(write)
                guard case .written(let result) = try await backend.tree.write(namespace: namespace, request, judge: judge, forwardingAs: rulesCaller()) else {
                    return nil
                }
                return .acknowledged(write.id, .set(path: result.path, value: result.value))
            case .merge(let entries):
                var prepared: [TreeUpdateEntry] = []
                for (relative, json) in entries {
                    prepared.append(TreeUpdateEntry(path: relative, value: try TreeWriteValue.prepare(json, at: write.path.appending(relative))))
                }
                var request = TreeWriteRequest(path: write.path, operation: .update(prepared))
                request.receipt = receipt(write)
                guard case .written(let result) = try await backend.tree.write(namespace: namespace, request, judge: judge, forwardingAs: rulesCaller()) else {
                    return nil
                }
                return .acknowledged(write.id, .merge(path: write.path, entries: result.entries))
            case .transaction(let transaction):
                return try await run(transaction, write, judge: judge)
            }
        } catch let error as FiregateError where error.status.isPermanentWriteError {
            return .failed(write.id, error)
        } catch {
            return nil
        }
    }

    /// Runs a transaction against the server's value, retrying on conflict up to 25 times.
    private func run(_ transaction: TreeTransaction, _ write: TreeUserWrite, judge: TreeRulesJudge?) async throws -> Input {
        for _ in 0..<TreeTransaction.maxRetries {
            let current = try await backend.tree.read(namespace: namespace, path: write.path)
            guard let next = transaction.apply(to: current) else {
                return .acknowledged(write.id, .transaction(path: write.path, committed: false, value: current))
            }
            var request = TreeWriteRequest(path: write.path, operation: .set(.node(next)), ifMatch: TreeETag.of(current))
            request.receipt = receipt(write)
            if case .written(let result) = try await backend.tree.write(namespace: namespace, request, judge: judge, forwardingAs: rulesCaller()) {
                return .acknowledged(write.id, .transaction(path: write.path, committed: true, value: result.value))
            }
        }
        return .failed(write.id, FiregateError(.aborted, "maxretry: the transaction was retried \(TreeTransaction.maxRetries) times without succeeding."))
    }

    /// What makes `write` apply once when it goes to another replica owning the namespace.
    private func receipt(_ write: TreeUserWrite) -> QueuedWriteReceipt {
        QueuedWriteReceipt(client: clientID, kind: .tree, id: write.id, stamp: write.stamp)
    }

    /// The judge of a request the client sends now, or nil when the rules do not judge it.
    func rulesJudge() -> TreeRulesJudge? {
        backend.rules.treeJudge(namespace, caller: rulesCaller())
    }

    /// The client as it sends a request now (also how a replica not owning the namespace
    /// sends its writes to the owner, judged there as the client's).
    func rulesCaller() -> RulesCaller {
        RulesCaller(identity: link.identity, surface: "edge", client: clientID)
    }

    // MARK: Answers

    /// The server applied a write: it leaves the queue, and where no complete listen keeps
    /// the location current the server's value is cached as complete (the SDK does this so it
    /// reads as complete after a restart).
    func applyAcknowledgement(_ id: Int64, _ acknowledgement: TreeAcknowledgement) -> [TreePath] {
        guard let write = writes.remove(id) else { return [] }
        storage?.deleteWrite(id: id)
        let values = acknowledgement.values
        var changed: [TreePath] = []
        for (path, value) in values where !isKeptCurrent(path) {
            if let spec = cache.applyAcknowledged(value, at: path, now: nowMillis()), let tracked = cache.tracked[spec] { saveTracked(spec, tracked) }
            changed.append(path)
        }
        saveCache(changed)
        finish(id, .acknowledged(answer: acknowledgement.answer))
        backend.operations.record(.writeAcknowledged(client: clientID, writeID: "t\(id)"))
        timeline.writeAcknowledged("t\(id)", commitTime: nil)
        return write.touchedPaths + values.map(\.0)
    }

    /// Whether a server listen with data keeps `path` current (a complete default listen at
    /// or above it).
    func isKeptCurrent(_ path: TreePath) -> Bool {
        listens.contains { $0.key.query == nil && $0.value.hasData && $0.key.path.contains(path) }
    }

    /// The server refused a write: it leaves the queue and the local view reverts.
    func applyFailure(_ id: Int64, _ error: FiregateError) -> [TreePath] {
        guard let write = writes.remove(id) else { return [] }
        storage?.deleteWrite(id: id)
        finish(id, .rejected(error))
        let decision = error.status == .permissionDenied ? backend.rules.decisions.latestRefusal(client: clientID) : nil
        backend.operations.record(.writeRejected(client: clientID, writeID: "t\(id)", error: error, decision: decision))
        timeline.writeRejected("t\(id)", error: error, decision: decision)
        return write.touchedPaths
    }

    func finish(_ id: Int64, _ state: TreeWriteState) {
        writeStates.settle(id, state)
        for waiter in ackWaiters.removeValue(forKey: id) ?? [] { waiter.resume(returning: state) }
    }

    /// Waits for the write's outcome (`?waitFor=ack`).
    public func outcome(of id: Int64) async -> TreeWriteState {
        if let state = writeStates[id], case .pending = state {
            return await withCheckedContinuation { ackWaiters[id, default: []].append($0) }
        }
        return writeStates[id] ?? .rejected(FiregateError(.notFound, "No tree write \(id)."))
    }

    public func writeState(_ id: Int64) -> TreeWriteState? { writeStates[id] }

    /// The queued writes in order, for `GET /clients/{id}/pendingWrites`.
    public func pendingWritesJSON() -> [JSON] {
        writes.writes.map { write in
            var json: JSON = ["id": .string("t\(write.id)"), "state": "pending", "path": .string(write.path.description)]
            switch write.wire {
            case .set(let value): json = json.withMember("set", value)
            case .merge(let entries): json = json.withMember("update", .members(entries.map { ($0.0.joined, $0.1) }))
            case .transaction(let transaction): json = json.withMember("transaction", .string(transaction.name))
            }
            return json
        }
    }

    // MARK: Gates

    /// `gates:releaseWrite`: sends the oldest `count` queued writes now, even with the gate
    /// closed, and returns their outcomes once applied.
    public func releaseWrites(count: Int) async -> [(Int64, TreeWriteState)] {
        var released: [(Int64, TreeWriteState)] = []
        for _ in 0..<max(count, 0) {
            guard connected, !sending, let next = writes.writes.first(where: { !$0.sent }), next.durable else { break }
            sending = true
            writes.update(next.id) { $0.sent = true }
            let outcome = await transmit(next)
            sending = false
            if let outcome { inputs.yield(outcome) } else { writes.update(next.id) { $0.sent = false } }
            await drainInputs()
            released.append((next.id, writeStates[next.id] ?? .pending))
        }
        return released
    }

    /// `gates:releaseWrite {"fail"}`: the oldest queued write fails with `status`; a permanent
    /// status rejects and reverts it, a transient one leaves it queued.
    public func failWrite(_ status: Status) -> (Int64, TreeWriteState)? {
        guard let next = writes.writes.first(where: { !$0.sent }) else { return nil }
        if status.isPermanentWriteError {
            process([.failed(next.id, FiregateError(status, "The write was rejected by the test harness (\(status.rawValue))."))])
        }
        return (next.id, writeStates[next.id] ?? .pending)
    }
}

/// The values a write resolves against on the client: the cached server data with pending
/// writes laid over, and the client's clock (server values are estimates until the server
/// resolves them).
struct LocalTreeValues {
    let cache: TreeServerCache
    let writes: TreeWriteTree
    let nowMillis: Int64

    func decode(_ json: JSON, at path: TreePath) throws(FiregateError) -> TreeNode {
        guard path.keys.first != TreeInfo.rootKey else { throw TreeInfo.writeError }
        let serverValues = TreeServerValues(nowMillis: nowMillis, current: { [cache, writes] location in
            writes.overlay(cache.root.node(at: location), at: location)
        })
        return try TreeNodeDecoder.decode(json, at: path, serverValues: serverValues)
    }
}

extension TreeUserWrite {
    /// Rebuilds a stored write: its values resolve again on the client, at replay time.
    static func restored(_ body: JSON, local: LocalTreeValues) throws(FiregateError) -> TreeUserWrite {
        guard let id = body["id"]?.integerLike, let text = body["path"]?.stringValue else { throw .invalidArgument("Damaged stored write.") }
        let path = TreePath(keys: text.isEmpty ? [] : text.split(separator: "/", omittingEmptySubsequences: false).map(String.init))
        let stamp = body["stamp"]?.integerLike ?? 0
        if let value = body["set"] {
            var write = TreeUserWrite(id: id, path: path, change: .set(try local.decode(value, at: path)), wire: .set(value), durable: true)
            write.stamp = stamp
            return write
        }
        guard case .object(let members)? = body["merge"] else { throw .invalidArgument("Damaged stored write.") }
        var wire: [(TreePath, JSON)] = []
        var applied: [TreePatchEntry] = []
        for (key, value) in members.sorted(by: { $0.key < $1.key }) {
            let relative = try TreePath(validating: key)
            wire.append((relative, value))
            applied.append(TreePatchEntry(path: relative, node: try local.decode(value, at: path.appending(relative))))
        }
        var write = TreeUserWrite(id: id, path: path, change: .merge(applied), wire: .merge(wire), durable: true)
        write.stamp = stamp
        return write
    }
}
