import FiregateBackend
import FiregateModel

/// onDisconnect: operations the server runs when this client's connection drops
/// (docs/wire/realtime-database.md, onDisconnect).
extension TreeSync {
    /// Registers an operation: accepted by the server at once while connected, else queued
    /// and registered at the next connect. Returns its state.
    public func addOnDisconnect(path: TreePath, op: String, value: JSON?) throws(FiregateError) -> JSON {
        guard path.keys.first != TreeInfo.rootKey else { throw TreeInfo.writeError }
        begin()
        let kind: OnDisconnectOperation.Kind
        switch op {
        case "set":
            guard let value else { throw .invalidArgument("onDisconnect set needs a value.") }
            _ = try TreeWriteValue.prepare(value, at: path)
            kind = .set(value)
        case "remove":
            kind = .set(.null)
        case "update":
            guard let value, case .object = value else { throw .invalidArgument("onDisconnect update needs an object of children or paths.") }
            let entries = try TreeUpdateEntry.checkedRelativePaths(of: value, under: path).raw
            if entries.isEmpty { return ["path": .string(path.description), "op": "update", "state": "registered"] }
            kind = .update(entries)
        default:
            throw .invalidArgument("op must be \"set\", \"update\" or \"remove\".")
        }
        let operation = OnDisconnectOperation(path: path, kind: kind, registered: connected)
        onDisconnect.add(operation)
        timeline.onDisconnect(registered: true, path: path.description, op: op)
        if operation.registered { keepRegistered() }
        return operation.json
    }

    /// Cancels the operations at `path` and below (queued or registered); returns how many.
    public func cancelOnDisconnect(path: TreePath) -> Int {
        begin()
        let cancelled = onDisconnect.cancel(at: path)
        if cancelled > 0 { keepRegistered() }
        return cancelled
    }

    /// On replicas: the registered operations, as they are now, go to the shared store, so that
    /// another replica runs them if this one dies with the client (docs/replicas.md).
    func keepRegistered() {
        guard let replicas = backend.replicas else { return }
        let registered = onDisconnect.operations.filter(\.registered)
        replicas.keepOnDisconnect(connection: "edge:\(clientID)", namespace: namespace,
                                  operations: registered.isEmpty ? nil : JSONWriter.bytes(.array(registered.map(\.json))))
    }

    /// Runs the registered operations: locally as server data at once, then on the server,
    /// with server values resolved there at execution time.
    func runOnDisconnect() {
        let operations = onDisconnect.takeRegistered()
        guard !operations.isEmpty else { return }
        keepRegistered()   // claimed here before they run
        let local = LocalTreeValues(cache: cache, writes: writes, nowMillis: serverTimeMillis())
        var touched: [TreePath] = []
        for operation in operations {
            switch operation.kind {
            case .set(let json):
                if let node = try? local.decode(json, at: operation.path) {
                    cache.applyServerValue(node, at: operation.path)
                    touched.append(operation.path)
                }
            case .update(let entries):
                for (relative, json) in entries {
                    let path = operation.path.appending(relative)
                    if let node = try? local.decode(json, at: path) {
                        cache.applyServerValue(node, at: path)
                        touched.append(path)
                    }
                }
            }
        }
        for write in writes.writes where write.isTransaction && !write.sent && touched.contains(where: { write.touches($0) }) {
            writes.remove(write.id)
            finish(write.id, .rejected(FiregateError(.aborted, "set: the transaction was overridden by an onDisconnect operation.")))
        }
        saveCache(touched)
        refreshViews(touching: touched)
        let previous = disconnectWork, tree = backend.tree, namespace = self.namespace, operationsLog = backend.operations, client = clientID, timeline = self.timeline
        disconnectWork = Task {
            await previous?.value
            for operation in operations {
                guard let request = try? operation.request() else { continue }
                // Judged when registered; on replicas, run at the namespace's owner as the admin.
                _ = try? await tree.write(namespace: namespace, request, forwardingAs: RulesCaller(identity: .admin, surface: "edge", client: client))
                operationsLog.record(.onDisconnect(client: client, path: operation.path.description, op: operation.name))
                timeline.onDisconnect(registered: false, path: operation.path.description, op: operation.name)
            }
        }
    }
}
