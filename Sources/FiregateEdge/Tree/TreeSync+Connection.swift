import FiregateBackend
import FiregateModel
import FiregateStore

/// The connection to the backend: connecting and dropping, one server listen per active
/// spec, and the ordered inputs (listen data, write answers) applied to the cache.
extension TreeSync {
    // MARK: Connection

    /// Opens the connection: `.info/connected` turns true, listens restart, queued
    /// onDisconnect operations are registered and queued writes go out.
    func connect() {
        guard started, link.online, !connected else { return }
        connected = true
        info.connected = true
        refreshViews(touching: [TreePath(keys: [TreeInfo.rootKey])])
        for spec in Set(views.keys.filter { !$0.isInfo }.map(\.spec)) where views.isActive(spec) { openListen(spec) }
        onDisconnect.registerQueued()
        if !onDisconnect.operations.isEmpty { keepRegistered() }
        pump()
    }

    /// The connection dropped (network off, restart, terminate, delete, heartbeat timeout):
    /// `.info/connected` turns false, then the registered onDisconnect operations apply
    /// locally as server data and the server carries them out — before anything the client
    /// sends after reconnecting.
    func disconnect() {
        guard connected else { return }
        connected = false
        info.connected = false
        for spec in Array(listens.keys) { closeListen(spec) }
        held.removeAll { if case .frame = $0 { true } else { false } }
        refreshViews(touching: [TreePath(keys: [TreeInfo.rootKey])])
        runOnDisconnect()
    }

    // MARK: Server listens

    func openListen(_ spec: TreeQuerySpec) {
        guard connected, listens[spec] == nil else { return }
        nextGeneration += 1
        let generation = nextGeneration
        listens[spec] = ServerListen(generation: generation)
        let inputs = self.inputs, tree = backend.tree, namespace = self.namespace
        let key = TreeStreamKey(path: spec.path, query: spec.query, format: .plain)
        // Judged as it is opened, with the identity the client has then; a denied listen is
        // cancelled as production cancels it (its listeners end with permission_denied).
        let judge = rulesJudge(), identity = link.identity
        opening[generation] = Task {
            if let judge, let root = try? await tree.snapshot(namespace: namespace),
               !judge.allowsRead(spec.path, query: spec.query, root: root) {
                inputs.yield(.frame(spec, generation: generation, .cancel("Permission denied")))
                self.attach(nil, to: spec, generation: generation)
                return
            }
            let subscription = try? await tree.subscribe(namespace: namespace, key: key, identity: identity) { frame in
                inputs.yield(.frame(spec, generation: generation, frame))
            }
            self.attach(subscription, to: spec, generation: generation)
        }
    }

    private func attach(_ subscription: TreeStreamSubscription?, to spec: TreeQuerySpec, generation: Int) {
        opening.removeValue(forKey: generation)
        guard let subscription else { return }
        guard listens[spec]?.generation == generation else {
            let tree = backend.tree
            Task { await tree.unsubscribe(subscription) }
            return
        }
        listens[spec]?.subscription = subscription
    }

    func closeListen(_ spec: TreeQuerySpec) {
        guard let listen = listens.removeValue(forKey: spec), let subscription = listen.subscription else { return }
        let tree = backend.tree
        Task { await tree.unsubscribe(subscription) }
    }

    /// A view became active or inactive: track it, and listen while connected.
    func setActive(_ spec: TreeQuerySpec, _ active: Bool) {
        guard !spec.path.keys.starts(with: [TreeInfo.rootKey]) else { return }
        let wasActive = cache.tracked[spec]?.active ?? false
        if active != wasActive || cache.tracked[spec] == nil {
            let query = cache.setActive(spec, active, now: nowMillis())
            saveTracked(spec, query)
        }
        if active { openListen(spec) } else { closeListen(spec) }
    }

    func saveTracked(_ spec: TreeQuerySpec, _ query: TreeServerCache.TrackedQuery) {
        guard persistent, let storage else { return }
        storage.saveQuery(.init(id: query.id, path: spec.path.joined, parameters: spec.parameters, lastUse: query.lastUse,
                                complete: query.complete, active: query.active, keys: Array(query.keys)))
    }

    func saveCache(_ paths: [TreePath]) {
        guard persistent, let storage, !paths.isEmpty else { return }
        var disjoint: [TreePath] = []
        for path in paths.sorted(by: { $0.count < $1.count }) where !disjoint.contains(where: { $0.contains(path) }) {
            disjoint.append(path)
        }
        storage.applyCache(TreeStorageEncoding.operations(replacing: disjoint, in: cache.root))
    }

    // MARK: Inputs

    func receive(_ input: Input) {
        switch input {
        case .marker(let continuation):
            continuation.resume()
        case .failed:
            process([input])
        case .frame, .acknowledged:
            if link.holdWatch {
                // The write's outcome is known now; its effect on the views waits with the
                // server data the gate holds.
                if case .acknowledged(let id, let acknowledgement) = input { finish(id, .acknowledged(answer: acknowledgement.answer)) }
                held.append(input)
            } else {
                process([input])
            }
        }
    }

    /// Delivers what the watch gate held, as one operation.
    func releaseWatch() {
        let inputs = held
        held.removeAll()
        process(inputs)
    }

    /// Applies inputs to the cache and the writes, then updates every touched view once.
    func process(_ inputs: [Input]) {
        var touched: [TreePath] = []
        for input in inputs {
            switch input {
            case .frame(let spec, let generation, let frame): touched += apply(frame, for: spec, generation: generation)
            case .acknowledged(let id, let acknowledgement): touched += applyAcknowledgement(id, acknowledgement)
            case .failed(let id, let error): touched += applyFailure(id, error)
            case .marker(let continuation): continuation.resume()
            }
        }
        refreshViews(touching: touched)
    }

    /// Waits until the listens being opened have queued their first data and every input
    /// queued so far has been taken (held ones stay held).
    func drainInputs() async {
        for task in Array(opening.values) { await task.value }
        await withCheckedContinuation { continuation in inputs.yield(.marker(continuation)) }
    }

    private func apply(_ frame: TreeStreamFrame, for spec: TreeQuerySpec, generation: Int) -> [TreePath] {
        guard var listen = listens[spec], listen.generation == generation else { return [] }
        if frame.kind == .cancel {
            closeListen(spec)
            views.cancel(spec, with: FiregateError(.permissionDenied, "permission_denied at \(spec.path): Client doesn't have permission to access the desired data."))
            return []
        }
        guard let update = frame.update else { return [] }
        let now = nowMillis()
        var changed: [TreePath]
        if spec.query == nil {
            switch update {
            case .put(let relative, let node) where relative.isRoot:
                let result = cache.applyServerResult(node, for: spec, now: now)
                for query in result.queries { if let tracked = cache.tracked[query] { saveTracked(query, tracked) } }
                changed = result.paths
            case .put(let relative, let node):
                cache.applyServerValue(node, at: spec.path.appending(relative))
                changed = [spec.path.appending(relative)]
            case .patch(let relative, let entries):
                changed = entries.map { spec.path.appending(relative).appending($0.path) }
                for (entry, path) in zip(entries, changed) { cache.applyServerValue(entry.node, at: path) }
            }
        } else {
            switch update {
            case .put(let relative, let node): listen.result.set(node, at: relative)
            case .patch(let relative, let entries):
                for entry in entries { listen.result.set(entry.node, at: relative.appending(entry.path)) }
            }
            let result = cache.applyServerResult(listen.result, for: spec, now: now)
            if let tracked = cache.tracked[spec] { saveTracked(spec, tracked) }
            changed = result.paths
        }
        listen.hasData = true
        listens[spec] = listen
        saveCache(changed)
        return changed + [spec.path] + noteServerWrite()
    }
}
