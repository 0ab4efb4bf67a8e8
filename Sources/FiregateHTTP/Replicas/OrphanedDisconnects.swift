import FiregateBackend
import FiregateModel
import Logging

/// Runs the onDisconnect operations of a dead replica's connections, once this replica has
/// claimed them from the store (DESIGN §1.8): each as the admin, in the order registered, at
/// the namespace's owner (here, or forwarded there as its REST write).
struct OrphanedDisconnects: Sendable {
    let backend: Backend
    let forwarding: OwnerForwarding
    let logger: Logger

    func run(namespace: String, operations bytes: [UInt8]) async {
        let operations: [OnDisconnectOperation]
        do {
            guard case .array(let items) = try JSONParser.parse(bytes) else { return }
            operations = try items.map { item throws(FiregateError) in try OnDisconnectOperation(json: item) }
        } catch {
            logger.warning("A dead replica's onDisconnect operations could not be read: \(error)")
            return
        }
        for operation in operations {
            // The namespace's owner may be the dead replica itself, its lease a moment longer
            // than its heartbeat: UNAVAILABLE is tried again until the lease has moved on.
            let deadline = ContinuousClock.now + .seconds(30)
            while true {
                do {
                    try await run(operation, in: namespace)
                    backend.operations.record(.onDisconnect(client: "replica-reaper", path: operation.path.description, op: operation.name))
                } catch let error as FiregateError where error.status == .unavailable && ContinuousClock.now < deadline {
                    try? await Task.sleep(for: .milliseconds(250))
                    continue
                } catch {
                    logger.warning("A dead replica's onDisconnect \(operation.name) at \(operation.path) failed: \(error)")
                }
                break
            }
        }
    }

    private func run(_ operation: OnDisconnectOperation, in namespace: String) async throws {
        guard let target = try forwarding.target(.tree(namespace: namespace)) else {
            _ = try await backend.tree.write(namespace: namespace, try operation.request(), judge: nil)
            return
        }
        let location = operation.path.keys.map(OwnerForwarding.percentEncoded).joined(separator: "/")
        let uri = "/\(location).json?ns=\(OwnerForwarding.percentEncoded(namespace))"
        switch operation.kind {
        case .set(.null):
            _ = try await forwarding.call(.DELETE, uri, json: nil, authorization: "Bearer owner", to: target)
        case .set(let value):
            _ = try await forwarding.call(.PUT, uri, json: value, authorization: "Bearer owner", to: target)
        case .update(let entries):
            _ = try await forwarding.call(.PATCH, uri, json: .members(entries.map { ($0.0.joined, $0.1) }), authorization: "Bearer owner", to: target)
        }
    }
}
