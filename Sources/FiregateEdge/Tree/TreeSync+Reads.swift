import FiregateBackend
import FiregateModel

/// What a one-shot read through the client answers.
public struct TreeRead: Sendable {
    public let result: TreeQueryEvaluator.Result
    /// Answered from the client's cache (offline), not by the server.
    public let fromCache: Bool
    /// The cache knew the whole answer; false for a partial answer offline.
    public let complete: Bool
    public let hasPendingWrites: Bool
}

/// Reads, listeners and keepSynced through the client.
extension TreeSync {
    /// A one-shot read (the SDK's `get()`): connected, an active complete view answers, else
    /// the server does (and its answer is cached); offline, the cache answers what it knows,
    /// and a location it knows nothing about is UNAVAILABLE.
    public func read(_ key: TreeViewKey) async throws(FiregateError) -> TreeRead {
        begin()
        let pending = writes.touches(key.path)
        if key.isInfo {
            return TreeRead(result: result(viewState(key), key), fromCache: false, complete: true, hasPendingWrites: false)
        }
        if connected {
            if views.isActive(key.spec), listens[key.spec]?.hasData == true, !link.holdWatch {
                let state = viewState(key)
                if state.complete { return TreeRead(result: result(state, key), fromCache: false, complete: true, hasPendingWrites: pending) }
            }
            let node: TreeNode
            if let judge = rulesJudge() {
                let root: TreeNode
                do { root = try await backend.tree.snapshot(namespace: namespace) } catch { throw FiregateError(.unavailable, "The server could not be read: \(error)") }
                try judge.read(key.path, query: key.spec.query, root: root)
            }
            do {
                node = try await backend.tree.read(namespace: namespace, path: key.path)
            } catch {
                throw FiregateError(.unavailable, "The server could not be read: \(error)")
            }
            if listens[key.spec] == nil {
                let server = key.spec.query.map { TreeQueryEvaluator.evaluate($0, on: node).node } ?? node
                let applied = cache.applyServerResult(server, for: key.spec, now: nowMillis())
                for spec in applied.queries { if let tracked = cache.tracked[spec] { saveTracked(spec, tracked) } }
                saveCache(applied.paths)
                refreshViews(touching: applied.paths + noteServerWrite())
            }
            let state = TreeViewState(data: writes.overlay(node, at: key.path), query: key.query, complete: true)
            return TreeRead(result: result(state, key), fromCache: false, complete: true, hasPendingWrites: pending)
        }
        let state = viewState(key)
        guard state.complete || !state.node.isEmpty else {
            throw FiregateError(.unavailable, "Unable to get latest value for query \(key.spec), client offline with no active listeners and no matching disk cache entries")
        }
        return TreeRead(result: result(state, key), fromCache: true, complete: state.complete, hasPendingWrites: pending)
    }

    func result(_ state: TreeViewState, _ key: TreeViewKey) -> TreeQueryEvaluator.Result {
        key.spec.query == nil ? .whole(state.node) : .children(state.entries)
    }

    /// Starts a listener: it gets the view's current events at once, then every change.
    public func listen(_ key: TreeViewKey, kinds: Set<TreeEvent.Kind>) -> AsyncStream<TreeListenerOutput> {
        begin()
        let (stream, output) = AsyncStream.makeStream(of: TreeListenerOutput.self, bufferingPolicy: .unbounded)
        let id = views.register(key, state: viewState(key), kinds: kinds, output: output)
        timeline.listenOpened("t\(id)", target: key.spec.path.description)
        output.onTermination = { [weak self] _ in
            Task { await self?.unregister(key, id) }
        }
        setActive(key.spec, true)
        return stream
    }

    func unregister(_ key: TreeViewKey, _ id: Int) {
        timeline.listenClosed("t\(id)")
        if views.unregister(key, id), !views.isActive(key.spec) { setActive(key.spec, false) }
    }

    /// keepSynced: the location is listened to with no listener, and never pruned.
    public func keepSynced(_ key: TreeViewKey, _ enabled: Bool) throws(FiregateError) {
        guard !key.isInfo else { throw .invalidArgument("Can't call keepSynced() on .info paths.") }
        begin()
        _ = views.setKeptSynced(key, enabled, state: viewState(key))
        setActive(key.spec, views.isActive(key.spec))
    }

    /// How many listeners the client has on the tree.
    public var listenerCount: Int { views.listenerCount }
}
