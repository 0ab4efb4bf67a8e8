import FiregateModel
@testable import FiregateRules
import XCTest

/// Realtime Database rules: loading (comments, compile errors), the expression semantics
/// production shows (B5), cascading reads and writes, `$` wildcards, and `.validate`.
final class RealtimeRulesTests: XCTestCase {
    /// A tree before and after a write, as JSON.
    struct Trees: RealtimeRulesData {
        var before: JSON
        var after: JSON

        func value(at path: [String], after isAfter: Bool) -> JSON? {
            var node = isAfter ? after : before
            for key in path {
                guard case .object(let fields) = node, let child = fields[key] else { return nil }
                node = child
            }
            return node == .null ? nil : node
        }
    }

    func json(_ text: String) -> JSON { try! JSONParser.parse(text) }

    var rules: String { RealtimeRulesTests.rulesSource }

    static let rulesSource = """
    {
      // who may see what
      "rules": {
        ".read": false,
        "users": {
          "$uid": {
            ".read": "auth != null && auth.uid == $uid",
            ".write": "auth.uid === $uid",   /* the owner only */
            ".validate": "newData.hasChildren(['name'])",
            "name": { ".validate": "newData.isString() && newData.val().length < 10" },
            "$other": { ".validate": false }
          }
        },
        "public": { ".read": true, ".write": "now > 0", "locked": { ".write": false } },
        "scores": { ".indexOn": ["score", ".value"], ".read": "query.orderByChild === 'score' && query.limitToFirst <= 10" }
      }
    }
    """

    func context(_ trees: Trees, uid: String?, query: [String: JSON] = [:]) -> RealtimeRulesContext {
        RealtimeRulesContext(data: trees, claims: uid.map { .object(["sub": .string($0), "firebase": ["sign_in_provider": "custom"]]) },
                             nowMillis: 1_700_000_000_000, query: query)
    }

    func testReadsCascadeDownAndAreNotFilters() throws {
        let ruleset = try RealtimeRuleset.parse(rules)
        let trees = Trees(before: json(#"{"users":{"alice":{"name":"A"},"bob":{"name":"B"}}}"#), after: .null)
        XCTAssertTrue(ruleset.read(["users", "alice"], context(trees, uid: "alice")).allowed)
        XCTAssertTrue(ruleset.read(["users", "alice", "name"], context(trees, uid: "alice")).allowed)  // granted above
        XCTAssertFalse(ruleset.read(["users", "bob"], context(trees, uid: "alice")).allowed)
        XCTAssertFalse(ruleset.read(["users"], context(trees, uid: "alice")).allowed)  // a child's grant is not the parent's
        XCTAssertFalse(ruleset.read(["users", "alice"], context(trees, uid: nil)).allowed)
        XCTAssertTrue(ruleset.read(["public", "x", "y"], context(trees, uid: nil)).allowed)
        XCTAssertEqual(ruleset.scoresIndex, ["score", ".value"])
        XCTAssertTrue(ruleset.read(["scores"], context(trees, uid: nil, query: ["orderByChild": "score", "limitToFirst": 5])).allowed)
        XCTAssertFalse(ruleset.read(["scores"], context(trees, uid: nil)).allowed)
    }

    func testWritesNeedAWriteGrantAndEveryValidate() throws {
        let ruleset = try RealtimeRuleset.parse(rules)
        let before = json(#"{"users":{}}"#)
        func write(_ path: [String], _ after: String, uid: String?) -> RealtimeRulesDecision {
            ruleset.write(path, context(Trees(before: before, after: json(after)), uid: uid))
        }
        XCTAssertTrue(write(["users", "alice"], #"{"users":{"alice":{"name":"Alice"}}}"#, uid: "alice").allowed)
        XCTAssertFalse(write(["users", "alice"], #"{"users":{"alice":{"name":"Alice"}}}"#, uid: "bob").allowed)
        XCTAssertFalse(write(["users", "alice"], #"{"users":{"alice":{"nick":"A"}}}"#, uid: "alice").allowed)   // no name; $other false
        XCTAssertFalse(write(["users", "alice"], #"{"users":{"alice":{"name":"far too long"}}}"#, uid: "alice").allowed)
        // A delete skips validation; a deeper .write cannot revoke a shallower grant.
        XCTAssertTrue(write(["users", "alice"], #"{"users":{}}"#, uid: "alice").allowed)
        XCTAssertTrue(write(["public", "locked"], #"{"public":{"locked":1}}"#, uid: nil).allowed)
        let denied = write(["users", "alice"], #"{"users":{"alice":{"name":"Alice"}}}"#, uid: nil)
        XCTAssertFalse(denied.allowed)
        XCTAssertEqual(denied.outcomes.map(\.location), ["/users/alice"])
        XCTAssertEqual(denied.outcomes.first?.result, "false")  // auth.uid on null auth is null, not an error
    }

    func testExpressionsBehaveAsProductionDoes() throws {
        func check(_ rule: String, uid: String? = "u", data: String = #"{"bar":"bar"}"#) -> String {
            let source = "{\"rules\": {\".read\": \"\(rule.replacingOccurrences(of: "\"", with: "\\\""))\"}}"
            guard let ruleset = try? RealtimeRuleset.parse(source) else { return "compile error" }
            return ruleset.read([], context(Trees(before: json(data), after: .null), uid: uid)).outcomes[0].result
        }
        XCTAssertEqual(check("auth.uid !== 'eviluser'", uid: nil), "true")
        XCTAssertEqual(check("auth.foo.baz == null", uid: nil), "true")
        XCTAssertTrue(check("auth.contains('75')", uid: nil).hasPrefix("error"))
        XCTAssertTrue(check("root.child('users/' + auth.uid).exists()", uid: nil).hasPrefix("error"))
        XCTAssertEqual(check("(auth.uid + 1) == 'u1'"), "true")
        XCTAssertEqual(check("(1/0 + '') == 'NaN'"), "true")
        XCTAssertEqual(check("'one' == 1"), "false")
        XCTAssertTrue(check("'foo' > auth.foo").hasPrefix("error"))
        XCTAssertEqual(check("root.child('bar').val().matches(/BAR/i)"), "true")
        XCTAssertEqual(check("root.child('bar').val().matches(/bar/ig)"), "compile error")
        XCTAssertEqual(check("root['exists']() == true"), "true")
        XCTAssertTrue(check("root.parent().exists()").hasPrefix("error"))
        XCTAssertEqual(check("query.orderByKey == true && query.limitToFirst == null"), "true")
        XCTAssertEqual(check("skies == 1"), "compile error")
        XCTAssertEqual(check("auth.uid = 'x'"), "compile error")
        XCTAssertEqual(check("true; true"), "compile error")
        XCTAssertEqual(check("2 ** 3 == 8"), "compile error")
        XCTAssertEqual(check("data.child('bar').val().replace('a', 'o') == 'bor' && 'Hey'.toLowerCase().beginsWith('he')"), "true")
    }

    /// A missing child is no child (regression: JSON's nil literal is its null, and
    /// `value(…) != nil` compared with `.null`, so every child looked present).
    func testHasChildAndHasChildrenSeeOnlyWhatIsThere() throws {
        let ruleset = try RealtimeRuleset.parse(#"{"rules": {".write": true, "a": {".validate": "newData.hasChild('x') && newData.hasChildren(['x', 'y'])"}}}"#)
        let before = json("{}")
        func allowed(_ after: String) -> Bool { ruleset.write(["a"], context(Trees(before: before, after: json(after)), uid: nil)).allowed }
        XCTAssertTrue(allowed(#"{"a":{"x":1,"y":2}}"#))
        XCTAssertFalse(allowed(#"{"a":{"x":1}}"#))
        XCTAssertFalse(allowed(#"{"a":{"y":1}}"#))
    }

    /// Regex literals as the Realtime Database takes them (B4): anchors only at the ends, no
    /// empty alternative; escaped and bracketed characters are literals.
    func testRegexLiteralsFollowTheDatabasesRestrictions() {
        func loads(_ regex: String) -> Bool {
            (try? RealtimeRuleset.parse(#"{"rules": {".read": "auth.uid.matches(\#(regex))"}}"#)) != nil
        }
        XCTAssertTrue(loads("/^a(b|c)*$/i"))
        XCTAssertTrue(loads(#"/a\\$b[$^|]/"#))  // an escaped $, and ^ $ | inside a class
        XCTAssertFalse(loads("/a^b/"))
        XCTAssertFalse(loads("/a$b/"))
        XCTAssertFalse(loads("/(a||b)/"))
        XCTAssertFalse(loads("/|a/"))
        XCTAssertFalse(loads("/(|a)/"))
    }

    /// `.indexOn` at the queried location: a query ordered by another child gets the SDK's warning.
    func testAnOrderByAChildNotIndexedIsWarnedAbout() throws {
        let ruleset = try RealtimeRuleset.parse(#"{"rules": {"scores": {".indexOn": ["score"], "$uid": {}}}}"#)
        XCTAssertNil(ruleset.missingIndexWarning(at: ["scores"], orderBy: "score"))
        XCTAssertNil(ruleset.missingIndexWarning(at: ["scores"], orderBy: nil))
        let warning = try XCTUnwrap(ruleset.missingIndexWarning(at: ["scores"], orderBy: "name"))
        XCTAssertTrue(warning.contains(#"".indexOn": "name" at /scores"#), warning)
        XCTAssertNotNil(ruleset.missingIndexWarning(at: ["other"], orderBy: "score"))
    }

    func testBadRulesFilesAreIssues() {
        XCTAssertThrowsError(try RealtimeRuleset.parse("{\"rules\": {\n  \".read\": tru\n}}")) { error in
            XCTAssertEqual((error as? RulesIssue)?.position.line, 2)
        }
        for bad in [#"{"rules": {".read": 7}}"#, #"{"rules": {"$a": {}, "$b": {}}}"#, #"{"rules": {"$a": {"$a": {}}}}"#,
                    #"{"rules": {".reed": true}}"#, #"{"other": {}}"#, #"{"rules": {".read": "$nope == 1"}}"#] {
            XCTAssertThrowsError(try RealtimeRuleset.parse(bad), bad)
        }
    }
}

extension RealtimeRuleset {
    var scoresIndex: [String] { root.children["scores"]!.indexOn }
}
