@testable import FiregateRules
import FiregateModel
import XCTest

/// Expressions and whole decisions: CEL error semantics, the library, matching with wildcards,
/// document accesses and their limit, and the emulator's denial message.
final class FirestoreRulesDecisionTests: XCTestCase {
    /// Documents by full path, for `get`/`exists`.
    struct Table: RulesDocumentReader {
        let documents: [String: [String: RulesValue]]
        let after: [String: [String: RulesValue]?]

        init(_ documents: [String: [String: RulesValue]], after: [String: [String: RulesValue]?] = [:]) {
            self.documents = documents
            self.after = after
        }

        func resource(at path: [String], after isAfter: Bool) -> RulesValue? {
            let key = path.joined(separator: "/")
            let data = isAfter && after.keys.contains(key) ? after[key]! : documents[key]
            return data.map { .map(["data": .map($0), "id": .string(path.last!), "__name__": .path(path)]) }
        }
    }

    func evaluate(_ source: String, _ variables: [String: RulesValue] = [:], reader: Table? = nil) -> Result<RulesValue, RulesError> {
        do {
            return RulesEvaluator(reader: reader).evaluate(try FirestoreRulesParser.parseExpression(source), in: .init(variables: variables))
        } catch {
            return .failure(RulesError("parse: \(error)", at: RulesPosition(line: 0, column: 0)))
        }
    }

    func assertValue(_ source: String, _ expected: RulesValue, _ variables: [String: RulesValue] = [:], file: StaticString = #filePath, line: UInt = #line) {
        switch evaluate(source, variables) {
        case .success(let value): XCTAssertEqual(value, expected, source, file: file, line: line)
        case .failure(let error): XCTFail("\(source): \(error.message)", file: file, line: line)
        }
    }

    func assertError(_ source: String, _ message: String, _ variables: [String: RulesValue] = [:], file: StaticString = #filePath, line: UInt = #line) {
        switch evaluate(source, variables) {
        case .success(let value): XCTFail("\(source) gave \(value)", file: file, line: line)
        case .failure(let error): XCTAssertTrue(error.message.contains(message), "\(source): \(error.message)", file: file, line: line)
        }
    }

    func testErrorsAreAbsorbedByTheDecidingSideOfAndAndOr() {
        let vars: [String: RulesValue] = ["m": .map(["a": .int(1)]), "n": .null]
        assertValue("m.missing || true", .bool(true), vars)
        assertValue("true || m.missing", .bool(true), vars)
        assertValue("m.missing && false", .bool(false), vars)
        assertValue("false && m.missing", .bool(false), vars)
        assertError("m.missing && true", "Property missing is undefined on object.", vars)
        assertError("false || m.missing", "Property missing is undefined on object.", vars)
        assertError("n.uid == null", "Null value error.", vars)
        assertError("!m.missing", "undefined", vars)
        assertValue("true ? 1 : m.missing", .int(1), vars)
    }

    func testOperatorsAndTypes() {
        assertValue("1 + 2 * 3", .int(7))
        assertValue("7 / 2", .int(3))
        assertValue("7.0 / 2", .float(3.5))
        assertValue("1 == 1.0", .bool(true))
        assertValue("'ab' + 'c' == 'abc'", .bool(true))
        assertValue("'a' < 'b' && [1, 2] == [1, 2]", .bool(true))
        assertValue("2 in [1, 2] && 'k' in {'k': 1} && !('x' in {'k': 1})", .bool(true))
        assertValue("1 is int && 1.5 is float && 1 is number && 'x' is string && null is null", .bool(true))
        assertError("1 / 0", "Division by zero")
        assertError("9223372036854775807 + 1", "overflow")
        assertError("'a' + 1", "does not apply")
        assertValue("[1, 2, 3][1:] == [2, 3] && 'hello'[1:3] == 'el' && 'hello'[0] == 'h'", .bool(true))
        assertError("[1][3]", "out of range")
    }

    func testLibrary() {
        assertValue("'Hello'.lower() == 'hello' && ' x '.trim() == 'x' && 'abc'.size() == 3", .bool(true))
        assertValue("'user_42'.matches('user_[0-9]+') && !'user_42x'.matches('user_[0-9]+')", .bool(true))
        assertValue("'a/b/c'.split('/') == ['a', 'b', 'c']", .bool(true))
        assertValue("'foo@test.com'.replace('.', '-')", .string("------------"))
        assertValue("['a', 'a', 'b'].hasOnly(['a', 'b', 'b']) && ['a', 'b'].hasAll(['a']) && ['a'].hasAny(['z', 'a'])", .bool(true))
        assertValue("{'a': {'b': 1}}.get(['a', 'b'], 7) == 1 && {'a': 1}.get('z', 7) == 7", .bool(true))
        assertValue("{'a': 1, 'b': 2, 'c': 3}.diff({'a': 1, 'b': 9, 'd': 4}).affectedKeys() == ['b', 'c', 'd'].toSet()", .bool(true))
        assertValue("{'a': 1, 'b': 2}.diff({'a': 1}).affectedKeys().hasOnly(['b'])", .bool(true))
        assertValue("duration.value(90, 'm') == duration.value(1, 'h') + duration.value(30, 'm')", .bool(true))
        assertValue("timestamp.value(1500) - timestamp.value(500) == duration.value(1, 's')", .bool(true))
        assertValue("timestamp.date(2024, 2, 29).month() == 2 && timestamp.value(0).year() == 1970", .bool(true))
        assertValue("math.abs(-3) == 3 && math.floor(2.7) == 2.0 && math.pow(2, 10) == 1024.0", .bool(true))
        assertValue("string(true) == 'true' && string(1) == '1' && string(2.0) == '2.0' && string(null) == 'null'", .bool(true))
        assertValue("int('42') + int(2.9) == 44", .bool(true))
        assertError("'x'.matches('(?=x)')", "lookaround")
        assertError("'x'.matches('[')", "Invalid regular expression")
        assertError("'x'.nope()", "not defined")
    }

    func ruleset(_ source: String) throws -> FirestoreRuleset { try FirestoreRulesParser.parse(source).0 }

    let time = RulesValue.timestamp(seconds: 1_700_000_000, nanos: 0)

    /// codelab-rules' final rules: a `let` reading a claim the token lacks holds an error, and
    /// `||` absorbs it as any other error (the official emulator allows the author).
    func testALetWhoseValueIsAnErrorIsAbsorbedByTheDecidingSide() throws {
        let rules = try ruleset("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            function canRead() {
              let isAuthor = resource.data.author == request.auth.uid;
              let isModerator = request.auth.token.isModerator == true;
              return isAuthor || isModerator;
            }
            function strict() {
              let isModerator = request.auth.token.isModerator == true;
              return isModerator && true;
            }
            function shadowed(isModerator) {
              let isModerator = request.auth.token.isModerator == true;
              return false || isModerator;
            }
            match /posts/{id} { allow get: if canRead(); }
            match /strict/{id} { allow get: if strict(); }
            match /shadowed/{id} { allow get: if shadowed(true); }
          }
        }
        """)
        func path(_ tail: String) -> [String] { ["databases", "(default)", "documents"] + tail.split(separator: "/").map(String.init) }
        func auth(_ uid: String, _ claims: [String: RulesValue] = [:]) -> RulesValue { .map(["uid": .string(uid), "token": .map(claims)]) }
        let post = Table(["databases/(default)/documents/posts/p": ["author": .string("alice")]])
        func decide(_ tail: String, _ who: RulesValue) -> FirestoreRulesDecision {
            let resource = post.resource(at: path("posts/p"), after: false)
            return rules.decide(FirestoreRulesRequest(method: .get, path: path(tail), auth: who, time: time, resource: resource ?? .null), reader: post)
        }
        XCTAssertTrue(decide("posts/p", auth("alice")).allowed)
        XCTAssertTrue(decide("posts/p", auth("bob", ["isModerator": .bool(true)])).allowed)
        let bob = decide("posts/p", auth("bob"))
        XCTAssertFalse(bob.allowed)
        XCTAssertTrue(bob.message.contains("Property isModerator is undefined on object."), bob.message)
        XCTAssertFalse(decide("strict/p", auth("alice")).allowed)
        XCTAssertTrue(decide("strict/p", auth("alice", ["isModerator": .bool(true)])).allowed)
        // The failed binding shadows the parameter of the same name: still an error, still denied.
        XCTAssertFalse(decide("shadowed/p", auth("alice")).allowed)
    }

    func testEveryCompleteMatchIsTriedAndAnyAllowGrants() throws {
        let rules = try ruleset("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{database}/documents {
            function signedIn() { return request.auth != null; }
            match /cities/{city} {
              allow read: if signedIn() && request.auth.uid == city;
              allow write: if request.resource.data.keys().hasOnly(['name', 'pop']);
            }
            match /{path=**}/landmarks/{id} {
              allow read: if path[1] == 'SF' && id == 'coit';
            }
            match /cities/{city}/landmarks/{rest=**} {
              allow get: if rest[0] == 'coit';
            }
          }
        }
        """)
        func path(_ tail: String) -> [String] { ["databases", "(default)", "documents"] + tail.split(separator: "/").map(String.init) }
        let alice = RulesValue.map(["uid": .string("alice"), "token": .map([:])])

        let own = rules.decide(FirestoreRulesRequest(method: .get, path: path("cities/alice"), auth: alice, time: time), reader: nil)
        XCTAssertTrue(own.allowed)
        XCTAssertEqual(own.outcomes.first?.bindings, ["database": "(default)", "city": "alice"])

        let other = rules.decide(FirestoreRulesRequest(method: .get, path: path("cities/bob"), auth: alice, time: time), reader: nil)
        XCTAssertFalse(other.allowed)
        XCTAssertEqual(other.message, "\nfalse for 'get' @ L6")

        // Unauthenticated: `request.auth != null` is false, so `&&` stops before the null dereference.
        let anonymous = rules.decide(FirestoreRulesRequest(method: .get, path: path("cities/bob"), time: time), reader: nil)
        XCTAssertEqual(anonymous.message, "\nfalse for 'get' @ L6")

        // Two complete matches: the first denies, the recursive one grants.
        let landmark = rules.decide(FirestoreRulesRequest(method: .get, path: path("cities/SF/landmarks/coit"), time: time), reader: nil)
        XCTAssertTrue(landmark.allowed)
        XCTAssertEqual(landmark.outcomes.map(\.line), [10, 13])

        let badWrite = rules.decide(FirestoreRulesRequest(method: .create, path: path("cities/x"), time: time,
                                                          requestResource: .map(["data": .map(["name": .string("X"), "mayor": .string("?")])])),
                                    reader: nil)
        XCTAssertFalse(badWrite.allowed)
        let delete = rules.decide(FirestoreRulesRequest(method: .delete, path: path("cities/x"), time: time, requestResource: .null), reader: nil)
        XCTAssertEqual(delete.message, "\nNull value error. for 'delete' @ L7")

        let unmatched = rules.decide(FirestoreRulesRequest(method: .get, path: path("towns/x"), time: time), reader: nil)
        XCTAssertEqual(unmatched.message, "\nNo matching allow statements")
    }

    func testVersionOneRecursiveWildcardsNeedOneSegmentAndComeLast() throws {
        let source = "service cloud.firestore { match /databases/{d}/documents { match /cities/{rest=**} { allow read; } } }"
        let v1 = try ruleset(source)
        let v2 = try ruleset("rules_version = '2';\n" + source)
        let cities = ["databases", "(default)", "documents", "cities"]
        XCTAssertTrue(v1.decide(FirestoreRulesRequest(method: .get, path: cities + ["SF"], time: time), reader: nil).allowed)
        XCTAssertFalse(v1.decide(FirestoreRulesRequest(method: .list, path: cities, time: time), reader: nil).allowed)
        XCTAssertTrue(v2.decide(FirestoreRulesRequest(method: .list, path: cities, time: time), reader: nil).allowed)
    }

    func testDocumentAccessesAreCountedOncePerDocumentAndBounded() throws {
        let rules = try ruleset("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{db}/documents {
            match /posts/{id} {
              allow update: if get(/databases/$(db)/documents/users/$(request.auth.uid)).data.role == 'admin'
                            && exists(/databases/$(db)/documents/users/$(request.auth.uid))
                            && getAfter(/databases/$(db)/documents/posts/$(id)).data.title is string;
              allow get: if debug(exists(/databases/$(db)/documents/a/1)) || exists(/databases/$(db)/documents/a/2)
                         || exists(/databases/$(db)/documents/a/3) || exists(/databases/$(db)/documents/a/4)
                         || exists(/databases/$(db)/documents/a/5) || exists(/databases/$(db)/documents/a/6)
                         || exists(/databases/$(db)/documents/a/7) || exists(/databases/$(db)/documents/a/8)
                         || exists(/databases/$(db)/documents/a/9) || exists(/databases/$(db)/documents/a/10)
                         || exists(/databases/$(db)/documents/a/11);
            }
          }
        }
        """)
        let table = Table(["databases/(default)/documents/users/u1": ["role": .string("admin")]],
                          after: ["databases/(default)/documents/posts/p": ["title": .string("new")]])
        let auth = RulesValue.map(["uid": .string("u1"), "token": .map([:])])
        let post = ["databases", "(default)", "documents", "posts", "p"]
        let update = rules.decide(FirestoreRulesRequest(method: .update, path: post, auth: auth, time: time), reader: table)
        XCTAssertTrue(update.allowed, update.message)
        XCTAssertEqual(update.accessCalls, 2)  // users/u1 read twice counts once; getAfter is its own

        let many = rules.decide(FirestoreRulesRequest(method: .get, path: post, auth: auth, time: time), reader: table)
        XCTAssertFalse(many.allowed)
        XCTAssertTrue(many.message.hasPrefix("\nevaluation error at L"), many.message)
        XCTAssertEqual(many.debugOutput, ["bool_value: false"])
    }

    func testFunctionsAreBoundedAndSeeTheirScope() throws {
        let rules = try ruleset("""
        rules_version = '2';
        service cloud.firestore {
          function loop(n) { return loop(n + 1); }
          match /databases/{db}/documents/{coll}/{id} {
            function inColl(name) { let wanted = name; return coll == wanted; }
            allow get: if inColl('open');
            allow list: if loop(0);
          }
        }
        """)
        let base = ["databases", "(default)", "documents"]
        XCTAssertTrue(rules.decide(FirestoreRulesRequest(method: .get, path: base + ["open", "x"], time: time), reader: nil).allowed)
        XCTAssertFalse(rules.decide(FirestoreRulesRequest(method: .get, path: base + ["shut", "x"], time: time), reader: nil).allowed)
        let recursion = rules.decide(FirestoreRulesRequest(method: .list, path: base + ["open", "x"], time: time), reader: nil)
        XCTAssertFalse(recursion.allowed)
        XCTAssertTrue(recursion.message.contains("evaluation error"), recursion.message)
    }

    func testInnerFunctionsShadowOuterOnesOnlyWithinTheirMatch() throws {
        let rules = try ruleset("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{db}/documents {
            function open() { return false; }
            match /a/{x} {
              function open() { return x == 'yes'; }
              allow get: if open();
              match /b/{y} { allow get: if open() && y == 'z'; }
            }
            match /c/{z} { allow get: if open(); }
          }
        }
        """)
        func allowed(_ tail: String) -> Bool {
            rules.decide(FirestoreRulesRequest(method: .get, path: ["databases", "(default)", "documents"] + tail.split(separator: "/").map(String.init),
                                               time: time), reader: nil).allowed
        }
        XCTAssertTrue(allowed("a/yes"))
        XCTAssertFalse(allowed("a/no"))
        XCTAssertTrue(allowed("a/yes/b/z"), "a nested match sees its parent's function")
        XCTAssertFalse(allowed("a/yes/b/w"))
        XCTAssertFalse(allowed("c/yes"), "a sibling match sees the outer function")
    }

    func testCoverageCountsEachValueAndCapsDistinctOnesPerExpression() throws {
        let rules = try ruleset("""
        rules_version = '2';
        service cloud.firestore {
          match /databases/{db}/documents/items/{id} {
            allow get: if id.size() > 2 && request.auth.uid == id;
          }
        }
        """)
        let coverage = RulesCoverage()
        for n in 0..<20 {
            let id = "item\(n)"
            let auth: RulesValue = n % 2 == 0 ? .map(["uid": .string(id)]) : .null
            let decision = rules.decide(FirestoreRulesRequest(method: .get, path: ["databases", "(default)", "documents", "items", id],
                                                              auth: auth, time: time), reader: nil, recordsVisits: true)
            coverage.record(decision.visits)
        }
        let values = coverage.valuesByPosition
        // `id.size() > 2` is true every time, so `request` is read in every decision.
        func counted(_ value: JSON, _ count: Int) -> Bool { values.values.contains { $0.contains { $0.value == value && $0.count == count } } }
        XCTAssertTrue(counted(["type": "map"], 20), "`request` is a map, counted by its type, in every decision")
        // `id` (in `id.size()`) took 20 distinct strings: 16 kept, the other 4 counted together.
        let ids = try XCTUnwrap(values.first { $0.value.count == RulesCoverage.valuesPerExpression + 1 })
        XCTAssertEqual(ids.value.map(\.count).reduce(0, +), 20)
        XCTAssertEqual(ids.value.first { $0.value == ["other": true] }?.count, 4)
        // `request.auth.uid` failed on null auth half of the time: each failure counted as its error.
        XCTAssertTrue(values.values.contains { $0.contains { $0.value == ["error": "Null value error."] && $0.count >= 10 } })
    }
}
