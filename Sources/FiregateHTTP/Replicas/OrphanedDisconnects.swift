import FiregateBackend
import FiregateModel
import Logging

/// Runs the onDisconnect operations of a dead replica's connections, once this replica has
/// claimed them from the store (DESIGN §1.8): each as the admin, in the order registered, at
/// the namespace's owner (here, or sent there as `OwnerTreeWriteSender` sends every tree write).
/// After each one the store keeps only what is left (none: the row goes), so if this replica
/// dies too the next one runs the rest: none is lost, and only the one under way may run twice.
struct OrphanedDisconnects: Sendable {
    let backend: Backend
    let logger: Logger

    func run(namespace: String, connection: String, operations bytes: [UInt8]) async {
        let items: [JSON]
        let operations: [OnDisconnectOperation]
        do {
            guard case .array(let array) = try JSONParser.parse(bytes) else { throw FiregateError.invalidArgument("not an array") }
            items = array
            operations = try items.map { item throws(FiregateError) in try OnDisconnectOperation(json: item) }
        } catch {
            logger.warning("A dead replica's onDisconnect operations could not be read, and are dropped: \(error)")
            backend.replicas?.keepOnDisconnect(connection: connection, namespace: namespace, operations: nil)
            return
        }
        for (index, operation) in operations.enumerated() {
            // The namespace's owner may be the dead replica itself, its lease a moment longer
            // than its heartbeat: UNAVAILABLE is tried again (the operations stay in the store
            // meanwhile, so they outlive this replica too).
            var pause = Duration.milliseconds(250)
            while true {
                do {
                    try await run(operation, in: namespace)
                    backend.operations.record(.onDisconnect(client: "replica-reaper", path: operation.path.description, op: operation.name))
                } catch let error as FiregateError where error.status == .unavailable {
                    try? await Task.sleep(for: pause)
                    pause = min(pause * 2, .seconds(5))
                    continue
                } catch {
                    logger.warning("A dead replica's onDisconnect \(operation.name) at \(operation.path) failed: \(error)")
                }
                break
            }
            let rest = Array(items[(index + 1)...])
            backend.replicas?.keepOnDisconnect(connection: connection, namespace: namespace, operations: rest.isEmpty ? nil : JSONWriter.bytes(.array(rest)))
        }
        if operations.isEmpty { backend.replicas?.keepOnDisconnect(connection: connection, namespace: namespace, operations: nil) }
    }

    /// Here, or at the namespace's owner when another replica holds it.
    private func run(_ operation: OnDisconnectOperation, in namespace: String) async throws {
        _ = try await backend.tree.write(namespace: namespace, try operation.request(), forwardingAs: RulesCaller(identity: .admin, surface: "replica"))
    }
}
