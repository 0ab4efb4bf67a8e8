import FiregateBackend
import FiregateModel

/// Sends an edge client's batch to the owner of its database as a REST commit (DESIGN §1.8).
/// It carries the client's identity as a bearer token, so the owner judges it by the rules as
/// the client's own. The owner commits it; the batch then leaves the client's queue here, after the answer, so a
/// replica dying in between sends it again: at least once, as the SDK does after a lost ack.
struct OwnerCommitSender: RemoteCommitSender {
    let forwarding: OwnerForwarding

    func commit(_ writes: [Write], in database: DatabaseID, as identity: CallIdentity) async throws(FiregateError) -> CommitResult? {
        guard let target = try forwarding.target(.documents(project: database.project, database: database.database)) else { return nil }
        let answer = try await forwarding.call(.POST, FirestoreGRPCService.restURI(database, verb: "commit"),
                                               json: ["writes": .array(writes.map { $0.json(database: database) })],
                                               authorization: identity.bearerToken.map { "Bearer \($0)" }, to: target)
        return try Self.result(answer)
    }

    /// A REST CommitResponse as the engine's result.
    static func result(_ json: JSON) throws(FiregateError) -> CommitResult {
        guard let time = json.member("commitTime")?.stringValue.flatMap(Timestamp.init(rfc3339:)) else {
            throw .internal("The owner's commit answer has no commitTime.")
        }
        var results: [WriteResult] = []
        for item in json.member("writeResults")?.arrayValue ?? [] {
            let updateTime = item.member("updateTime")?.stringValue.flatMap(Timestamp.init(rfc3339:))
            var transforms: [Value]?
            if let values = item.member("transformResults")?.arrayValue {
                transforms = []
                for value in values { transforms?.append(try Value(json: value)) }
            }
            results.append(WriteResult(updateTime: updateTime, transformResults: transforms))
        }
        return CommitResult(commitTime: time, writeResults: results)
    }
}
