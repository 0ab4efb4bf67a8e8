import FiregateBackend
import FiregateModel
import Foundation
import FiregateStore
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1

/// Writes that reach a replica not owning their scope go to the owner (docs/replicas.md): REST
/// requests as they came, gRPC calls as their REST twins. The owner runs them as its own (rules,
/// transactions and compare-and-set included) and its answer comes back unchanged, with
/// `Firegate-Forwarded-To` naming it. A forwarded request carries `Firegate-Forwarded-By` and the
/// cluster secret, and is never forwarded again: a replica that lost the scope meanwhile refuses
/// it UNAVAILABLE, and the client retries.
struct OwnerForwarding: Sendable {
    let directory: any ReplicaDirectory
    /// `--cluster-secret`: what a forwarded request must carry (none configured: none).
    let secret: String?
    var client = ForwardingClient()
    /// Who is the admin: a caller the admin is forwarded with its credential.
    var admin = AdminCredential(token: nil)
    /// Edge clients' queued writes being committed here for other replicas.
    let queuedWrites = QueuedWrites()

    static let forwardedBy = HTTPField.Name("Firegate-Forwarded-By")!
    static let secretField = HTTPField.Name("Firegate-Cluster-Secret")!
    static let forwardedTo = HTTPField.Name("Firegate-Forwarded-To")!
    /// On the owner's answer to a forwarded request: the log `seq` its memory reflects, which
    /// the forwarding replica waits to have applied before it answers (read-your-writes there).
    static let logSeq = HTTPField.Name("Firegate-Log-Seq")!

    /// Where a request goes: the owner of its scope, or of its edge client (no scope).
    struct Target: Sendable {
        let owner: ReplicaAddress
        let scope: ScopeLease.Scope?
    }

    /// Request headers that describe the hop, not the request.
    private static let hopHeaders: Set<String> = ["connection", "keep-alive", "transfer-encoding", "te", "upgrade", "host", "content-length",
                                                  "accept-encoding", "firegate-forwarded-by", "firegate-cluster-secret"]
    /// Answer headers this replica sets itself.
    private static let ownHeaders: Set<String> = ["connection", "keep-alive", "transfer-encoding", "content-length", "date", "server",
                                                  "firegate-replica"]

    /// Whether a request came from another replica. One that says so without the cluster
    /// secret is refused, so the marker cannot be used to bypass forwarding from outside.
    func isForwarded(_ headers: HTTPFields) throws(FiregateError) -> Bool {
        guard headers[Self.forwardedBy] != nil else { return false }
        guard Self.constantTimeEqual(headers[Self.secretField] ?? "", secret ?? "") else {
            throw FiregateError(.permissionDenied, "Firegate-Forwarded-By marks requests between replicas; this one does not carry the cluster secret (--cluster-secret).")
        }
        return true
    }

    /// The replica to send a write on `scope` to, or nil to serve it here: this replica owns the
    /// scope or may take it, or the request was forwarded already.
    func target(_ scope: ScopeLease.Scope, headers: HTTPFields) throws(FiregateError) -> Target? {
        guard try !isForwarded(headers) else { return nil }
        return try target(scope)
    }

    /// The owner of `scope` when it is another replica.
    func target(_ scope: ScopeLease.Scope) throws(FiregateError) -> Target? {
        try directory.owner(of: scope).map { Target(owner: $0, scope: scope) }
    }

    /// On the owner: the answer to a forwarded request says what log position it reflects.
    func mark(_ response: inout Response, answering headers: HTTPFields, scope: ScopeLease.Scope) {
        guard headers[Self.forwardedBy] != nil, let seq = directory.logSeq(of: scope) else { return }
        response.headers[Self.logSeq] = String(seq)
    }

    /// The REST request as it came (its body collected), answered by `owner`.
    func forward(_ request: Request, body: ByteBuffer, to target: Target) async throws(FiregateError) -> Response {
        let headers = Self.requestHeaders(request)
        let answer = try await exchange(.init(rawValue: request.method.rawValue), request.uri.description, headers: headers, body: body, to: target)
        let fields = Self.answerHeaders(answer.headers, from: target)
        return Response(status: .init(code: answer.status), headers: fields, body: .init(byteBuffer: answer.body))
    }

    /// The request as it came, answered by `target`'s owner as a stream (an event stream):
    /// the owner's head at once, then its events as they come, until either side ends it.
    func forwardStream(_ request: Request, to target: Target) async throws(FiregateError) -> Response {
        var headers = Self.requestHeaders(request)
        headers.replaceOrAdd(name: Self.forwardedBy.rawName, value: directory.replicaID)
        if let secret { headers.replaceOrAdd(name: Self.secretField.rawName, value: secret) }
        let head = HTTPRequestHead(version: .http1_1, method: .init(rawValue: request.method.rawValue), uri: request.uri.description, headers: headers)
        let answer: ForwardingClient.StreamingAnswer
        do {
            answer = try await client.stream(to: target.owner.address, head: head, body: ByteBuffer())
        } catch {
            throw .unavailable("Replica \(target.owner.id), which runs this, could not be reached at \(target.owner.address); retry. \(error.message)")
        }
        let fields = Self.answerHeaders(answer.headers, from: target)
        let body = answer.body, close = answer.close
        return Response(status: .init(code: answer.status), headers: fields, body: ResponseBody { writer in
            defer { close() }
            for try await part in body { try await writer.write(part) }
            try await writer.finish(nil)
        })
    }

    /// The request's own headers, without those of its hop.
    private static func requestHeaders(_ request: Request) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for field in request.headers where !hopHeaders.contains(field.name.canonicalName) {
            headers.add(name: field.name.rawName, value: field.value)
        }
        return headers
    }

    /// The owner's answer headers, but those this replica sets itself, naming the owner.
    private static func answerHeaders(_ headers: HTTPHeaders, from target: Target) -> HTTPFields {
        var fields = HTTPFields()
        for (name, value) in headers where !ownHeaders.contains(name.lowercased()) {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        fields[forwardedTo] = target.owner.id
        return fields
    }

    /// A REST call on `owner` standing for a gRPC call: its JSON answer, or its error as the
    /// owner gave it (status and message).
    func call(_ method: HTTPMethod, _ uri: String, json: JSON?, authorization: String?, receipt: QueuedWriteReceipt? = nil,
              to target: Target) async throws(FiregateError) -> JSON {
        let owner = target.owner
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        if let authorization { headers.add(name: "Authorization", value: authorization) }
        if let receipt { headers.add(name: QueuedWrites.header.rawName, value: receipt.header) }
        let body = ByteBuffer(bytes: json.map { JSONWriter.bytes($0) } ?? [])
        let answer = try await exchange(method, uri, headers: headers, body: body, to: target)
        let parsed = try? JSONParser.parse(answer.body.readableBytesView)
        guard (200..<300).contains(answer.status) else {
            let error = parsed?.member("error")
            let status = error?.member("status")?.stringValue.flatMap(Status.init(name:)) ?? .unknown
            throw FiregateError(status, error?.member("message")?.stringValue ?? "Replica \(owner.id) answered HTTP \(answer.status).")
        }
        guard let parsed else { throw .internal("Replica \(owner.id) answered with a body that is not JSON.") }
        return parsed
    }

    /// Sends the request to the target's owner; once answered, waits (bounded) until this
    /// replica has applied what the owner's memory reflected then.
    private func exchange(_ method: HTTPMethod, _ uri: String, headers: HTTPHeaders, body: ByteBuffer,
                          to target: Target) async throws(FiregateError) -> ForwardingClient.Answer {
        let owner = target.owner
        var headers = headers
        headers.replaceOrAdd(name: Self.forwardedBy.rawName, value: directory.replicaID)
        if let secret { headers.replaceOrAdd(name: Self.secretField.rawName, value: secret) }
        let head = HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers)
        let answer: ForwardingClient.Answer
        do {
            answer = try await client.send(to: owner.address, head: head, body: body)
        } catch {
            throw .unavailable("The owner of this data, replica \(owner.id), could not be reached at \(owner.address); retry (its lease runs out if it is gone). \(error.message)")
        }
        if let scope = target.scope, let seq = answer.headers.first(name: Self.logSeq.rawName).flatMap(Int64.init) {
            await directory.awaitLog(of: scope, through: seq, timeout: .seconds(2))
        }
        return answer
    }

    /// `value` as one URL component: everything but unreserved ASCII percent-encoded.
    static func percentEncoded(_ value: String) -> String {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let (x, y) = (Array(a.utf8), Array(b.utf8))
        guard x.count == y.count else { return false }
        return zip(x, y).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
