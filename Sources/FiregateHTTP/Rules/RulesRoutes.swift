import FiregateBackend
import FiregateModel
import FiregateRules
import Hummingbird
import NIOCore

/// Loading rules and reading decisions, at the emulators' URLs (docs/security-rules.md;
/// docs/wire/security-rules.md, "Loading rules"): `/emulator/v1/projects/{p}:securityRules` (Firestore),
/// `/.settings/rules.json?ns=` (tree), `/emulator/v1/rules/decisions[/{id}]`.
struct RulesRoutes: Sendable {
    let rules: SecurityRules
    let ticker: KeepAliveTicker

    // MARK: Firestore

    /// `PUT` loads `{"rules":{"files":[{"name"?,"content"}]},"ignore_errors"?}` and answers the
    /// issues; a ruleset with an error changes nothing and is a 400 unless `ignore_errors`
    /// (the CLI's way: 200 with the issues, which it reads). `GET` gives the source, `DELETE`
    /// goes back to the startup rules.
    func firestore(_ request: Request, project: String) async throws(FiregateError) -> Response {
        switch request.method {
        case .put, .post:
            let body = try await request.jsonObjectBody()
            guard let files = body.member("rules")?.member("files")?.arrayValue, !files.isEmpty else {
                throw .invalidArgument("The body must be {\"rules\":{\"files\":[{\"name\":…,\"content\":…}]}}.")
            }
            guard files.count == 1 else { throw .invalidArgument("Firestore rules come in one file; \(files.count) were given.") }
            guard let content = files[0].member("content")?.stringValue else { throw .invalidArgument("rules.files[0].content must be the rules text.") }
            let name = files[0].member("name")?.stringValue ?? "firestore.rules"
            let ignoreErrors = body.member("ignore_errors")?.boolValue ?? body.member("ignoreErrors")?.boolValue ?? false
            let (applied, issues) = rules.loadFirestore(project: project, fileName: name, source: content)
            let issuesJSON = JSON.array(issues.map { RulesRoutes.issueJSON($0, fileName: name) })
            if !applied && !ignoreErrors {
                let errors = issues.filter { $0.severity == .error }
                let summary = errors.map { "\($0.position): \($0.description)" }.joined(separator: "; ")
                var answer = JSON.errorBody(.invalidArgument("The ruleset has \(errors.count) error(s) and was not loaded: \(summary)"))
                answer = answer.withMember("issues", issuesJSON)
                return JSONResponse.make(answer, status: .badRequest)
            }
            return JSONResponse.make(["issues": issuesJSON])
        case .get:
            guard let release = rules.firestore(project: project) else {
                throw .notFound("No Firestore rules are loaded for project \(project): every request is allowed.")
            }
            return JSONResponse.make([
                "rules": ["files": [["name": .string(release.fileName), "content": .string(release.ruleset.source)]]],
                "issues": .array(release.issues.map { RulesRoutes.issueJSON($0, fileName: release.fileName) }),
                "loadTime": .string(release.loadedAt.rfc3339),
            ])
        case .delete:
            rules.resetFirestore(project: project)
            return JSONResponse.make([:])
        default:
            throw .notFound("No route for \(request.method) \(request.uri.path): use PUT, GET or DELETE.")
        }
    }

    /// An issue as the emulator reports it: `{sourcePosition:{fileName,line,column}, description, severity}`.
    static func issueJSON(_ issue: RulesIssue, fileName: String) -> JSON {
        ["sourcePosition": ["fileName": .string(fileName), "line": .int(Int64(issue.position.line)), "column": .int(Int64(issue.position.column))],
         "description": .string(issue.description), "severity": .string(issue.severity.rawValue)]
    }

    // MARK: Tree

    /// `/.settings/rules.json?ns=`: `PUT` the rules text (JSON with comments) as the admin,
    /// `GET` it back, `DELETE` to go back to the startup rules. Errors in the tree's shape.
    static func tree(_ request: Request, rules: SecurityRules, defaultNamespace: String) async -> Response {
        do {
            let parameters = try request.queryItems()
            let namespace = parameters.first { $0.name == "ns" }?.value ?? defaultNamespace
            try TreeBackend.validateNamespace(namespace)
            let token = CallIdentity.bearerToken(request.headers[.authorization]) ?? parameters.first { $0.name == "auth" }?.value
            // The rules are the admin's to change; to read too on a server with an admin token.
            if request.method != .get || rules.admin.token != nil {
                guard try rules.caller(token: token, judged: true, surface: "rest").identity == .admin else {
                    throw FiregateError(.unauthenticated, "Unauthorized request.")
                }
            }
            switch request.method {
            case .get:
                return JSONResponse.bytes(Array((rules.realtime(namespace: namespace)?.ruleset.source ?? RulesRoutes.openTreeRules).utf8))
            case .put, .delete:
                if request.method == .delete {
                    rules.resetRealtime(namespace: namespace)
                    return JSONResponse.make(["status": "ok"])
                }
                let body = try await request.body.collect(upTo: 256 * 1024)
                do {
                    try rules.loadRealtime(namespace: namespace, source: String(decoding: body.readableBytesView, as: UTF8.self))
                } catch {
                    throw FiregateError.invalidArgument("Line \(error.position.line): \(error.description)")
                }
                return JSONResponse.make(["status": "ok"])
            default:
                throw FiregateError.invalidArgument("Use GET, PUT or DELETE on /.settings/rules.json.")
            }
        } catch {
            return TreeResponses.error(ErrorResponse.normalize(error))
        }
    }

    /// What a namespace without rules behaves as.
    static let openTreeRules = "{\n  \"rules\": {\n    \".read\": true,\n    \".write\": true\n  }\n}\n"

    // MARK: Decisions

    /// `GET …/rules/decisions/{id}`: one trace. `GET …/rules/decisions`: the kept decisions as
    /// JSON, or with `Accept: text/event-stream` every new one as it is made (filters:
    /// `project`, `namespace`, `client`, `outcome`).
    func decisions(_ request: Request, id: String?) throws(FiregateError) -> Response {
        guard request.method == .get else { throw .notFound("No route for \(request.method) \(request.uri.path): only GET is served here.") }
        if let id {
            guard let record = rules.decisions.decision(id) else {
                throw .notFound("No decision \(id): decisions are kept for the last \(RulesDecisionLog.capacity) judged requests.")
            }
            return JSONResponse.make(record.json(trace: true))
        }
        let params = try QueryParameters(request)
        let filter = DecisionFilter(project: params.first("project"), namespace: params.first("namespace"), client: params.first("client"),
                                    outcome: params.first("outcome"))
        if request.headers[.accept]?.contains("text/event-stream") == true {
            return stream(request, filter: filter)
        }
        return JSONResponse.make(["decisions": .array(rules.decisions.recent.filter(filter.matches).map { $0.json(trace: false) })])
    }

    struct DecisionFilter: Sendable {
        let project: String?, namespace: String?, client: String?, outcome: String?

        func matches(_ record: RulesDecisionRecord) -> Bool {
            if let project, record.service != .firestore || record.scope != project { return false }
            if let namespace, record.service != .database || record.scope != namespace { return false }
            if let client, record.caller.client != client { return false }
            if let outcome, record.outcome.rawValue != outcome { return false }
            return true
        }
    }

    private func stream(_ request: Request, filter: DecisionFilter) -> Response {
        let decisions = rules.decisions.subscribe()
        return ServerSentEvents.response(request, events: decisions, capacity: RulesDecisionLog.capacity, ticker: ticker, end: {}) { record in
            filter.matches(record) ? ServerSentEvents.frame(event: "decision", id: record.id, json: record.json(trace: false)) : nil
        }
    }
}
