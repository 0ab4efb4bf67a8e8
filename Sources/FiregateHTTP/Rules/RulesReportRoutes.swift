import FiregateBackend
import FiregateModel
import FiregateRules
import Hummingbird

/// Coverage at the emulators' URLs (docs/wire/security-rules.md, Coverage) and the dry run
/// (C6): `/emulator/v1/projects/{p}:ruleCoverage[.html]`, `/.inspect/coverage[.json]?ns=`,
/// `POST /emulator/v1/projects/{p}:test`.
struct RulesReportRoutes: Sendable {
    let rules: SecurityRules

    /// The Firestore coverage report, as JSON or as a page.
    func firestoreCoverage(_ request: Request, project: String, html: Bool) throws(FiregateError) -> Response {
        guard request.method == .get else { throw .notFound("No route for \(request.method) \(request.uri.path): only GET is served here.") }
        guard let release = rules.firestore(project: project) else {
            throw .notFound("No Firestore rules are loaded for project \(project): there is no coverage to report.")
        }
        guard html else { return JSONResponse.make(release.coverage.report(release.ruleset, fileName: release.fileName)) }
        return RulesReportRoutes.page(title: "Rule coverage: \(project)", source: release.ruleset.source) { line in
            release.coverage.valuesByPosition.filter { $0.key.line == line }.sorted { $0.key.column < $1.key.column }
                .map { position, values in (position.column, values.map { "\(JSONWriter.string($0.value)) × \($0.count)" }) }
        }
    }

    /// The tree's coverage (`/.inspect/coverage.json` as JSON, else a page).
    func treeCoverage(_ request: Request, defaultNamespace: String, json: Bool) async -> Response {
        do {
            let namespace = try request.queryItems().first { $0.name == "ns" }?.value ?? defaultNamespace
            guard let release = rules.realtime(namespace: namespace) else {
                throw FiregateError.notFound("No rules are loaded for namespace \(namespace): there is no coverage to report.")
            }
            let report = release.coverage.report(release.ruleset)
            if json { return JSONResponse.make(report) }
            let rows = report.member("report")?.arrayValue ?? []
            let lines = rows.map { row in
                "\(row.member("kind")?.stringValue ?? "") \(row.member("location")?.stringValue ?? ""): \(JSONWriter.string(row.member("results") ?? [:]))"
            }
            return RulesReportRoutes.page(title: "Rule coverage: \(namespace)", source: release.ruleset.source, appendix: lines) { _ in [] }
        } catch {
            return TreeResponses.error(ErrorResponse.normalize(error))
        }
    }

    /// `POST …:test`: `{source?, testSuite}` → `{issues, testResults}` (the project's rules when
    /// no source is given).
    func test(_ request: Request, project: String) async throws(FiregateError) -> Response {
        guard request.method == .post else { throw .notFound("No route for \(request.method) \(request.uri.path): only POST is served here.") }
        let body = try await request.jsonObjectBody()
        guard let suite = body.member("testSuite"), case .object = suite else { throw .invalidArgument("The body needs a testSuite.") }
        let ruleset: FirestoreRuleset
        if let files = body.member("source")?.member("files")?.arrayValue {
            guard files.count == 1, let content = files[0].member("content")?.stringValue else {
                throw .invalidArgument("source.files must hold one file with its content.")
            }
            let name = files[0].member("name")?.stringValue ?? "firestore.rules"
            let (loaded, issues) = FirestoreRulesLoader.load(content)
            guard let loaded else {
                return JSONResponse.make(["issues": .array(issues.map { RulesRoutes.issueJSON($0, fileName: name) }), "testResults": []])
            }
            ruleset = loaded
        } else if let release = rules.firestore(project: project) {
            ruleset = release.ruleset
        } else {
            throw .failedPrecondition("No rules are loaded for project \(project), and the request gives no source.")
        }
        return JSONResponse.make(["issues": [], "testResults": .array(try RulesDryRun.run(suite, ruleset: ruleset, now: rules.now))])
    }

    /// A page of the source, each line with what its expressions evaluated to (hover a mark).
    static func page(title: String, source: String, appendix: [String] = [], values: (Int) -> [(column: Int, values: [String])]) -> Response {
        var html = "<!doctype html><meta charset=utf-8><title>\(escape(title))</title>"
        html += "<style>body{font:13px ui-monospace,monospace;margin:1em}td{padding:0 .5em;vertical-align:top;white-space:pre}"
        html += ".n{color:#888;text-align:right}.hit{background:#e6ffe6}.v{color:#555}</style><h1>\(escape(title))</h1><table>"
        for (i, line) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let marks = values(i + 1)
            let detail = marks.map { "col \($0.column): " + $0.values.joined(separator: ", ") }.joined(separator: "; ")
            html += "<tr\(marks.isEmpty ? "" : " class=hit")><td class=n>\(i + 1)</td><td>\(escape(String(line)))</td>"
            html += "<td class=v>\(escape(detail))</td></tr>"
        }
        html += "</table>"
        if !appendix.isEmpty { html += "<ul>" + appendix.map { "<li>" + escape($0) + "</li>" }.joined() + "</ul>" }
        return Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: .init(byteBuffer: .init(string: html)))
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
