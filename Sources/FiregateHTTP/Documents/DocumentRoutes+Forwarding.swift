import FiregateModel
import FiregateStore
import Hummingbird
import NIOCore

/// On replicas, the requests a database's owner must run: writes, transactions and the reads
/// made in one (their read set lives in the owner's memory, docs/replicas.md).
extension DocumentRoutes {
    static func scope(_ target: DocumentRequestPath) -> ScopeLease.Scope {
        .documents(project: target.database.project, database: target.database.database)
    }

    /// The owner's answer when `request` must run at the owner of `target`'s database and that is
    /// another replica; nil to serve it here.
    func forwarded(_ target: DocumentRequestPath, _ request: inout Request) async throws(FiregateError) -> Response? {
        guard let forwarding else { return nil }
        let method = Self.effectiveMethod(request)
        var inspectBody = false
        switch (method, target.verb) {
        case (.get, _):
            guard request.uri.queryParameters["transaction"] != nil else { return nil }
        case (.post, "listen"), (.post, "listCollectionIds"):
            return nil
        case (.post, "batchGet"), (.post, "runQuery"), (.post, "runAggregationQuery"):
            inspectBody = true
        case (.post, _), (.patch, _), (.delete, _):
            break
        default:
            return nil
        }
        let body = try await request.collectedBody()
        if inspectBody {
            // Only reads in a transaction; a body that does not parse is refused here, as locally.
            guard let json = try? JSONParser.parse(body.readableBytesView),
                  json.member("transaction") != nil || json.member("newTransaction") != nil else { return nil }
        }
        guard let owner = try forwarding.target(Self.scope(target), headers: request.headers) else { return nil }
        return try await forwarding.forward(request, body: body, to: owner)
    }
}
