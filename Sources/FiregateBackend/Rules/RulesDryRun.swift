import FiregateModel
import FiregateRules
import Foundation

/// The dry run of `POST /emulator/v1/projects/{p}:test`, modelled on the Firebase Rules API's
/// `projects.test` (docs/wire/security-rules.md, Dry run): each test case names a request, the stored
/// resource, the expected verdict and mocks for `get`/`exists` (no data is read), and gets back
/// SUCCESS or FAILURE with the `debug()` output, the function calls and the visited expressions.
public enum RulesDryRun {
    /// `testSuite.testCases` run against `ruleset`: one `TestResult` each.
    public static func run(_ suite: JSON, ruleset: FirestoreRuleset, now: Timestamp) throws(FiregateError) -> [JSON] {
        guard let cases = suite.member("testCases")?.arrayValue else { throw .invalidArgument("testSuite.testCases must be a list.") }
        var results: [JSON] = []
        for (i, testCase) in cases.enumerated() {
            results.append(try run(testCase, at: "testCases[\(i)]", ruleset: ruleset, now: now))
        }
        return results
    }

    static func run(_ testCase: JSON, at place: String, ruleset: FirestoreRuleset, now: Timestamp) throws(FiregateError) -> JSON {
        guard case .object = testCase else { throw .invalidArgument("\(place) must be an object.") }
        let expectation = testCase.member("expectation")?.stringValue ?? ""
        guard expectation == "ALLOW" || expectation == "DENY" else { throw .invalidArgument("\(place).expectation must be ALLOW or DENY.") }
        let request = testCase.member("request") ?? [:]
        guard let methodName = request.member("method")?.stringValue, let method = RulesMethod(rawValue: methodName.lowercased()) else {
            throw .invalidArgument("\(place).request.method must be get, list, create, update or delete.")
        }
        guard let pathText = request.member("path")?.stringValue, pathText.hasPrefix("/databases/") else {
            throw .invalidArgument("\(place).request.path must be a full path: /databases/(default)/documents/….")
        }
        var path = pathText.split(separator: "/").map(String.init)
        if method == .list { path.append(FirestoreRulesQuery.anyDocument) }
        var time = RulesValue.timestamp(seconds: now.seconds, nanos: now.nanos)
        if let text = request.member("time")?.stringValue {
            guard let parsed = Timestamp(rfc3339: text) else { throw .invalidArgument("\(place).request.time must be an RFC 3339 time.") }
            time = .timestamp(seconds: parsed.seconds, nanos: parsed.nanos)
        }
        let auth = request.member("auth").map { $0 == .null ? RulesValue.null : RulesValue(json: $0) } ?? .null
        let resource = testCase.member("resource").map { resourceValue($0, path: path) } ?? .null
        let requestResource = request.member("resource").map { resourceValue($0, path: path) }
        let rulesRequest = FirestoreRulesRequest(method: method, path: path, auth: auth, time: time, resource: resource,
                                                 requestResource: requestResource ?? (method == .delete ? .null : nil))
        let mocks = MockReader(mocks: try (testCase.member("functionMocks")?.arrayValue ?? []).map { mock throws(FiregateError) in try Mock(mock, place) })
        let decision = ruleset.decide(rulesRequest, reader: mocks, recordsVisits: true)
        let passed = decision.allowed == (expectation == "ALLOW")
        var result: JSON = [
            "state": passed ? "SUCCESS" : "FAILURE",
            "debugMessages": .array(decision.debugOutput.map(JSON.string)),
            "functionCalls": .array(mocks.calls.calls),
        ]
        if let failed = decision.visits.first(where: { if case .failure = $0.result { true } else { false } }) {
            result = result.withMember("errorPosition", ["line": .int(Int64(failed.position.line)), "column": .int(Int64(failed.position.column))])
        }
        if ["VISITED", "FULL"].contains(testCase.member("expressionReportLevel")?.stringValue ?? "NONE") {
            result = result.withMember("visitedExpressions", .array(decision.visits.map { visit in
                var item: JSON = ["sourcePosition": ["line": .int(Int64(visit.position.line)), "column": .int(Int64(visit.position.column))]]
                if case .success(let value) = visit.result { item = item.withMember("value", value.expressionValue) }
                return item
            }))
        }
        return result.withMember("outcomes", .array(decision.outcomes.map { ["line": .int(Int64($0.line)), "result": .string($0.result)] }))
    }

    /// `{"data": {…}}` as a resource, its id and name taken from the request's path.
    static func resourceValue(_ json: JSON, path: [String]) -> RulesValue {
        guard case .map(var fields) = RulesValue(json: json) else { return .null }
        let documentPath = path.last == FirestoreRulesQuery.anyDocument ? Array(path.dropLast()) : path
        if fields["data"] == nil { fields["data"] = .map([:]) }
        if fields["id"] == nil { fields["id"] = .string(documentPath.last ?? "") }
        if fields["__name__"] == nil { fields["__name__"] = .path(documentPath) }
        return .map(fields)
    }

    /// A mock of `get`, `exists`, `getAfter` or `existsAfter`: its argument (a path, or any) and result.
    struct Mock {
        let function: String
        let path: String?
        let result: JSON?

        init(_ json: JSON, _ place: String) throws(FiregateError) {
            guard let function = json.member("function")?.stringValue, ["get", "exists", "getAfter", "existsAfter"].contains(function) else {
                throw .invalidArgument("\(place).functionMocks: only get, exists, getAfter and existsAfter can be mocked (a dry run reads no data).")
            }
            self.function = function
            let argument = json.member("args")?.arrayValue?.first
            path = argument?.member("exactValue")?.stringValue
            result = json.member("result")?.member("value")
        }

        func matches(_ name: String, _ text: String) -> Bool { function == name && (path == nil || path == text) }
    }

    /// Answers document reads from the mocks, and records each call.
    final class MockReader: RulesDocumentReader {
        final class Calls { var calls: [JSON] = [] }
        let mocks: [Mock]
        let calls = Calls()

        init(mocks: [Mock]) { self.mocks = mocks }

        func resource(at path: [String], after: Bool) -> RulesValue? {
            let text = "/" + path.joined(separator: "/")
            let names = after ? ("getAfter", "existsAfter") : ("get", "exists")
            if let mock = mocks.first(where: { $0.matches(names.0, text) }) {
                calls.calls.append(["function": .string(names.0), "args": [["pathValue": ["segments": .array(path.map(JSON.string))]]],
                                    "result": mock.result ?? .null])
                guard let value = mock.result, value != .null else { return nil }
                return RulesDryRun.resourceValue(value, path: path)
            }
            if let mock = mocks.first(where: { $0.matches(names.1, text) }) {
                calls.calls.append(["function": .string(names.1), "args": [.string(text)], "result": mock.result ?? false])
                return mock.result?.boolValue == true ? RulesDryRun.resourceValue([:], path: path) : nil
            }
            calls.calls.append(["function": .string(names.0), "args": [.string(text)], "result": ["error": "Function not mocked."]])
            return nil
        }
    }
}
