@testable import FiregateRules
import XCTest

/// Firestore rules sources into rulesets, and the issues (line, column) of those that do not parse.
final class FirestoreRulesParserTests: XCTestCase {
    var sample: String { FirestoreRulesParserTests.sampleSource }

    static let sampleSource = """
    rules_version = '2';
    service cloud.firestore {
      // comments /* and */ blocks are skipped
      function signedIn() { return request.auth != null; }
      match /databases/{database}/documents {
        match /cities/{city} {
          function isOwner(uid) { let owner = resource.data.owner; return owner == uid; }
          allow read;
          allow create, update: if signedIn() && request.resource.data.name is string;
          allow delete: if isOwner(request.auth.uid)
          match /landmarks/{landmark=**} {
            allow get: if exists(/databases/$(database)/documents/cities/$(city));
          }
        }
        match /{path=**}/posts/{post} { allow list: if request.query.limit <= 10; }
      }
    }
    """

    func testASourceBecomesMatchesAllowsAndFunctions() throws {
        let (ruleset, warnings) = try FirestoreRulesParser.parse(sample)
        XCTAssertEqual(ruleset.version, 2)
        XCTAssertEqual(ruleset.root.functions.map(\.name), ["signedIn"])
        let documents = ruleset.root.matches[0]
        XCTAssertEqual(documents.pattern, [.literal("databases"), .variable("database"), .literal("documents")])
        let cities = documents.matches[0]
        XCTAssertEqual(cities.pattern, [.literal("cities"), .variable("city")])
        XCTAssertEqual(cities.allows.map(\.methods), [[.get, .list], [.create, .update], [.delete]])
        XCTAssertEqual(cities.allows.map(\.position.line), [8, 9, 10])
        XCTAssertNil(cities.allows[0].condition)
        XCTAssertEqual(cities.functions[0].parameters, ["uid"])
        XCTAssertEqual(cities.functions[0].bindings.map(\.name), ["owner"])
        XCTAssertEqual(cities.matches[0].pattern, [.literal("landmarks"), .recursive("landmark")])
        XCTAssertEqual(documents.matches[1].pattern, [.recursive("path"), .literal("posts"), .variable("post")])
        // `allow delete: if …` without its ';' before the next statement: accepted, with a warning.
        XCTAssertEqual(warnings.map(\.position.line), [11])
        XCTAssertEqual(warnings.first?.severity, .warning)
    }

    func testOperatorPrecedenceFollowsTheLanguage() throws {
        func shape(_ e: RulesExpression) -> String {
            switch e {
            case .literal(let v, _): return RulesLibrary.stringForm(v)
            case .identifier(let n, _): return n
            case .binary(let op, let l, let r, _): return "(\(shape(l)) \(op) \(shape(r)))"
            case .unary(let op, let x, _): return "\(op)\(shape(x))"
            case .isType(let x, let t, _): return "(\(shape(x)) is \(t))"
            case .conditional(let c, let y, let n, _): return "(\(shape(c)) ? \(shape(y)) : \(shape(n)))"
            case .member(let b, let n, _): return "\(shape(b)).\(n)"
            case .call(let f, let args, _): return "\(shape(f))(\(args.map(shape).joined(separator: ", ")))"
            default: return "?"
            }
        }
        let cases = [
            "a || b && c": "(a || (b && c))",
            "a == b && c != d": "((a == b) && (c != d))",
            "1 + 2 * 3 - 4": "((1 + (2 * 3)) - 4)",
            "!a && -b < c": "(!a && (-b < c))",
            "x in l == true": "((x in l) == true)",
            "x is int == true": "((x is int) == true)",
            "a ? b : c ? d : e": "(a ? b : (c ? d : e))",
            "f(x).y.z(1, 2)": "f(x).y.z(1, 2)",
        ]
        for (source, expected) in cases {
            XCTAssertEqual(shape(try FirestoreRulesParser.parseExpression(source)), expected, source)
        }
    }

    func testRawPathsInterpolateExpressions() throws {
        guard case .path(let parts, _) = try FirestoreRulesParser.parseExpression("/databases/(default)/documents/users/$(request.auth.uid)") else {
            return XCTFail("not a path")
        }
        XCTAssertEqual(parts.count, 5)
        guard case .text("(default)") = parts[1], case .interpolated(.member(_, "uid", _)) = parts[4] else { return XCTFail("\(parts)") }
        // `/` between operands is still division.
        guard case .binary("/", _, _, _) = try FirestoreRulesParser.parseExpression("a / b") else { return XCTFail("not division") }
    }

    func testBadSourcesAreIssuesWithTheirPosition() {
        let cases: [(String, Int, Int, String)] = [
            ("service cloud.firestore {\n  match /a/{b} {\n    allow read: if ;\n  }\n}", 3, 20, "expected an expression"),
            ("service cloud.firestore {\n  match /a/{b} {\n  }\n}", 2, 3, "at least one"),
            ("service cloud.storage { }", 1, 1, "Unknown service"),
            ("service cloud.firestore {\n  match /a {\n    allow fly;\n  }\n}", 3, 11, "Unknown method"),
            ("service cloud.firestore {\n  match /a {\n    allow read: if 'open;\n  }\n}", 3, 20, "Unterminated string"),
            ("rules_version = '3';\nservice cloud.firestore { }", 1, 17, "expected '1' or '2'"),
            ("service cloud.firestore {\n  match /a/{b=*} { allow read; }\n}", 2, 15, "'**'"),
            ("service cloud.firestore { /* never closed", 1, 27, "Unterminated comment"),
        ]
        for (source, line, column, text) in cases {
            XCTAssertThrowsError(try FirestoreRulesParser.parse(source), source) { error in
                guard let issue = error as? RulesIssue else { return XCTFail("\(error)") }
                XCTAssertEqual(issue.position, RulesPosition(line: line, column: column), "\(source): \(issue.description)")
                XCTAssertTrue(issue.description.contains(text), "\(source): \(issue.description)")
                XCTAssertEqual(issue.severity, .error)
            }
        }
    }

    func testPathologicalNestingIsAnIssueNotACrash() {
        let deep = String(repeating: "(", count: 5_000) + "1" + String(repeating: ")", count: 5_000)
        XCTAssertThrowsError(try FirestoreRulesParser.parseExpression(deep))
        let negations = String(repeating: "!", count: 5_000) + "true"
        XCTAssertThrowsError(try FirestoreRulesParser.parseExpression(negations))
        var matches = "service cloud.firestore {"
        for i in 0..<12 { matches += " match /m\(i) {" }
        matches += " allow read;" + String(repeating: " }", count: 12) + " }"
        XCTAssertThrowsError(try FirestoreRulesParser.parse(matches)) { error in
            XCTAssertTrue((error as? RulesIssue)?.description.contains("10 deep") == true, "\(error)")
        }
    }
}

/// What the loader checks after the parse: names, arity, recursion, `let` in version 1.
final class FirestoreRulesCheckerTests: XCTestCase {
    func issues(_ body: String, version: String = "2") -> [String] {
        FirestoreRulesLoader.load("rules_version = '\(version)';\nservice cloud.firestore {\n\(body)\n}").issues.map {
            "L\($0.position.line) \($0.severity.rawValue): \($0.description)"
        }
    }

    func testNamesArityAndRecursionAreCheckedAtLoad() {
        XCTAssertEqual(issues("match /a/{b} { allow read: if b == request.auth.uid && resource.data.x > math.abs(-1); }"), [])
        XCTAssertEqual(issues("match /a/{b} { allow read: if c == 1; }"), ["L3 ERROR: Unknown variable 'c'."])
        XCTAssertEqual(issues("match /a/{b} { allow read: if nope(); }"), ["L3 ERROR: Function not found: nope."])
        XCTAssertEqual(issues("function f(x) { return x; }\nmatch /a { allow read: if f(1, 2); }"), ["L4 ERROR: Function f takes 1 arguments, not 2."])
        XCTAssertEqual(issues("function f() { return g(); }\nfunction g() { return f(); }\nmatch /a { allow read: if f(); }"),
                       ["L3 ERROR: Function f calls itself (f → g → f); recursion is not allowed.",
                        "L4 ERROR: Function g calls itself (g → f → g); recursion is not allowed."])
        XCTAssertEqual(issues("function f() { let x = 1; return x; }\nmatch /a { allow read: if f(); }", version: "1"),
                       ["L3 ERROR: 'let' needs rules_version = '2'."])
        XCTAssertEqual(issues("match /a { allow read: if 1 is money; }"), ["L3 ERROR: Unknown type 'money'."])
        XCTAssertNil(FirestoreRulesLoader.load("service cloud.firestore { match /a { allow read: if x; } }").ruleset)
        let warned = FirestoreRulesLoader.load("service cloud.firestore { match /a { allow read: if true allow write; } }")
        XCTAssertNotNil(warned.ruleset)  // a warning does not keep it from loading
        XCTAssertEqual(warned.issues.map(\.severity), [.warning])
    }
}
