import FiregateBackend
import FiregateModel
import Hummingbird

/// Sends a tree write made on this replica (a socket's, an edge client's, an onDisconnect's) to
/// the owner of its namespace (docs/replicas.md), as `TreeWriteWire` JSON to the owner's
/// `POST /emulator/v1/replicas:treeWrite`, with the caller's identity as a bearer token so the
/// owner judges it by the rules as the caller's own. The owner's answer is the outcome, and this
/// replica has applied the write to its memory before the caller hears of it.
struct OwnerTreeWriteSender: RemoteTreeWriteSender {
    let forwarding: OwnerForwarding

    static let uri = "/emulator/v1/replicas:treeWrite"

    func write(namespace: String, _ request: TreeWriteRequest, as caller: RulesCaller) async throws(FiregateError) -> TreeWriteOutcome? {
        guard let target = try forwarding.target(.tree(namespace: namespace)) else { return nil }
        let answer = try await forwarding.call(.POST, Self.uri, json: TreeWriteWire.request(namespace: namespace, request, caller: caller),
                                               authorization: forwarding.admin.bearerToken(for: caller.identity).map { "Bearer \($0)" },
                                               receipt: try forwarding.stamped(request.receipt), to: target)
        return try TreeWriteWire.outcome(answer)
    }
}

/// The owner's side of `OwnerTreeWriteSender`: only for requests from another replica (the
/// cluster secret checked), run here and never sent on; a replica that lost the namespace
/// meanwhile refuses it UNAVAILABLE and the sender's caller retries.
struct ReplicaTreeWriteRoute {
    let backend: Backend
    let forwarding: OwnerForwarding?

    func respond(_ request: Request) async throws(FiregateError) -> Response {
        guard let forwarding, try forwarding.isForwarded(request.headers) else {
            throw FiregateError(.permissionDenied, "\(OwnerTreeWriteSender.uri) takes tree writes from other replicas only.")
        }
        var (namespace, write, surface, client) = try TreeWriteWire.request(try await request.jsonObjectBody())
        let caller = RulesCaller(identity: backend.rules.admin.identity(authorization: request.headers[.authorization]), surface: surface, client: client)
        write.receipt = try QueuedWrites.receipt(request.headers, forwarding: forwarding)
        let backend = backend
        let run = { () async throws(FiregateError) -> JSON in
            do {
                return TreeWriteWire.outcome(try await backend.tree.write(namespace: namespace, write, judge: backend.rules.treeJudge(namespace, caller: caller)))
            } catch let error as FiregateError {
                throw error
            } catch {
                throw .internal("The tree write failed: \(error)")
            }
        }
        // An edge client's queued write is made once, however often its replica sends it.
        let answer = if let receipt = write.receipt {
            try await forwarding.queuedWrites.answer(receipt, directory: forwarding.directory, commit: run)
        } else {
            try await run()
        }
        var response = JSONResponse.make(answer)
        forwarding.mark(&response, answering: request.headers, scope: .tree(namespace: namespace))
        return response
    }
}
