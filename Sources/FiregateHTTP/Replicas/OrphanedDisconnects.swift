import FiregateBackend
import FiregateModel
import FiregateStore
import Logging

/// Runs the onDisconnect operations of a dead replica's connections, once this replica has
/// claimed them from the store (docs/replicas.md): each as the admin, in the order registered, at
/// the namespace's owner (here, or sent there as `OwnerTreeWriteSender` sends every tree write).
/// Each write carries the claim's progress, stored in its own transaction only while the claim
/// is still this replica's: if this replica dies too, the next one runs exactly the rest, and
/// if it was only paused, it runs nothing the next one ran.
struct OrphanedDisconnects: Sendable {
    let backend: Backend
    let logger: Logger

    func run(_ claimed: OrphanedDisconnect) async {
        guard let replicas = backend.replicas else { return }
        let operations: [OnDisconnectOperation]
        do {
            guard case .array(let items) = try JSONParser.parse(claimed.operations) else { throw FiregateError.invalidArgument("not an array") }
            operations = try items.map { item throws(FiregateError) in try OnDisconnectOperation(json: item) }
        } catch {
            logger.warning("A dead replica's onDisconnect operations could not be read, and are dropped: \(error)")
            replicas.keepOnDisconnect(connection: claimed.connection, namespace: claimed.namespace, operations: nil)
            return
        }
        if claimed.done >= operations.count {
            replicas.keepOnDisconnect(connection: claimed.connection, namespace: claimed.namespace, operations: nil)
            return
        }
        for index in claimed.done..<operations.count {
            let operation = operations[index]
            let progress = DisconnectProgress(replica: replicas.replicaID, connection: claimed.connection, done: index + 1, total: operations.count)
            // The namespace's owner may be the dead replica itself, its lease a moment longer
            // than its heartbeat: UNAVAILABLE is tried again (the operations stay in the store
            // meanwhile, so they outlive this replica too).
            var pause = Duration.milliseconds(250)
            attempt: while true {
                do {
                    var request = try operation.request()
                    request.progress = progress
                    _ = try await backend.tree.write(namespace: claimed.namespace, request, forwardingAs: RulesCaller(identity: .admin, surface: "replica"))
                    backend.operations.record(.onDisconnect(client: "replica-reaper", path: operation.path.description, op: operation.name))
                } catch let error as FiregateError where error.status == .unavailable {
                    // Refused because this replica, paused past its heartbeat, lost the claim,
                    // or because the operation ran already? The store says which.
                    let claim: Int??   // nil: the store could not be asked
                    do { claim = .some(try replicas.disconnectClaim(connection: claimed.connection)) } catch { claim = nil }
                    switch claim {
                    case .some(nil): return   // another replica runs the rest
                    case .some(.some(let done)) where done > index: break attempt
                    default: break
                    }
                    try? await Task.sleep(for: pause)
                    pause = min(pause * 2, .seconds(5))
                    continue
                } catch {
                    logger.warning("A dead replica's onDisconnect \(operation.name) at \(operation.path) failed: \(error)")
                }
                break
            }
            // Also when no write stored it (the operation failed, or changed nothing): it only
            // ever moves forward, so it cannot undo a later operation's.
            replicas.recordDisconnectProgress(progress)
        }
    }
}
