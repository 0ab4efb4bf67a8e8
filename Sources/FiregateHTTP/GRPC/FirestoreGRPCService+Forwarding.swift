import FiregateBackend
import FiregateModel
import FiregateProto
import FiregateStore
import Foundation
import NIOHTTP1

/// On replicas, the gRPC calls a database's owner must run (writes, transactions, reads in a
/// transaction) go to the owner as their REST twins: same JSON in, same JSON out, the caller's
/// `authorization` with them, so the owner judges rules as it would the call itself.
extension FirestoreGRPCService {
    /// The `authorization` metadata of the call being served (set by `respond`).
    @TaskLocal static var authorization: String?

    /// The owner's answer to the REST twin of the call being served, when another replica owns
    /// `database`; nil to serve the call here.
    static func forwarded(_ forwarding: OwnerForwarding?, _ database: DatabaseID, method: HTTPMethod = .POST, _ uri: String,
                          _ json: JSON?) async throws(FiregateError) -> JSON? {
        guard let forwarding, let target = try forwarding.target(.documents(project: database.project, database: database.database)) else {
            return nil
        }
        return try await forwarding.call(method, uri, json: json, authorization: authorization, to: target)
    }

    func forwarded(_ database: DatabaseID, method: HTTPMethod = .POST, _ uri: String, _ json: JSON?) async throws(FiregateError) -> JSON? {
        try await Self.forwarded(forwarding, database, method: method, uri, json)
    }

    /// A commit (a Commit call, or a Write stream's request) at the database's owner.
    static func commit(_ database: DocumentDatabase, _ json: JSON, judge: DocumentRulesJudge?,
                       forwarding: OwnerForwarding?) async throws(FiregateError) -> JSON {
        if let answer = try await forwarded(forwarding, database.id, restURI(database.id, verb: "commit"),
                                            body(json, without: ["database", "streamId", "streamToken", "labels"])) {
            return answer
        }
        return try await DocumentCalls.commit(database, json, judge: judge)
    }

    /// `commit`, told on the connection's timeline (`writeID` there): the writes sent, then
    /// the answer, with the rules decision that refused them.
    static func commit(_ database: DocumentDatabase, _ json: JSON, writes: [Google_Firestore_V1_Write], judge: DocumentRulesJudge?,
                       forwarding: OwnerForwarding?, timeline: TimelineRecorder?, writeID: String) async throws(FiregateError) -> JSON {
        timeline?.writeSent(writeID, documents: writes.map(FirestoreWriteCall.path))
        do {
            let result = try await commit(database, json, judge: judge, forwarding: forwarding)
            timeline?.writeAcknowledged(writeID, commitTime: result.member("commitTime")?.stringValue.flatMap(Timestamp.init(rfc3339:)))
            return result
        } catch {
            timeline?.writeRejected(writeID, error: error, decision: judge?.decisionIDs.last)
            throw error
        }
    }

    /// Whether a read request reads in a transaction (an open one, or one it begins).
    static func inTransaction(_ json: JSON) -> Bool {
        json.member("transaction") != nil || json.member("newTransaction") != nil
    }

    /// `/v1/projects/p/databases/d/documents:verb`.
    static func restURI(_ database: DatabaseID, verb: String) -> String { "/v1/\(database.documentsRoot):\(verb)" }

    /// `/v1/{name}` with `query` (each value percent-encoded).
    static func restURI(_ name: String, query: [(String, String)]) -> String {
        let pairs = query.map { "\($0.0)=\(OwnerForwarding.percentEncoded($0.1))" }
        return "/v1/\(name)" + (pairs.isEmpty ? "" : "?" + pairs.joined(separator: "&"))
    }

    /// `json` (a request message) without the members the REST route takes from its URL.
    static func body(_ json: JSON, without members: Set<String>) -> JSON {
        guard case .object(var object) = json else { return json }
        for member in members { object.removeValue(forKey: member) }
        return .object(object)
    }

    /// The query parameters of a `currentDocument` precondition and of a `mask`.
    static func query(precondition: JSON?, mask: JSON?, updateMask: JSON? = nil) -> [(String, String)] {
        var query: [(String, String)] = []
        for path in updateMask?.member("fieldPaths")?.arrayValue ?? [] { if let path = path.stringValue { query.append(("updateMask.fieldPaths", path)) } }
        for path in mask?.member("fieldPaths")?.arrayValue ?? [] { if let path = path.stringValue { query.append(("mask.fieldPaths", path)) } }
        if let exists = precondition?.member("exists")?.boolValue { query.append(("currentDocument.exists", exists ? "true" : "false")) }
        if let time = precondition?.member("updateTime")?.stringValue { query.append(("currentDocument.updateTime", time)) }
        return query
    }
}
