@testable import FiregateBackend
import FiregateModel
import FiregateRules
import XCTest

/// The judges the surfaces call, against a real database and tree: a commit judged as one under
/// the database's lock (getAfter sees the batch, a denial writes nothing), batch writes judged
/// one by one, tree writes against the tree they would leave, and streams judged again when
/// the rules change.
final class RulesJudgeTests: XCTestCase {
    let marketplace = """
    rules_version = '2';
    service cloud.firestore {
      match /databases/{database}/documents {
        match /orders/{order} {
          allow create: if getAfter(/databases/$(database)/documents/stock/$(request.resource.data.item)).data.n
                           == get(/databases/$(database)/documents/stock/$(request.resource.data.item)).data.n - 1;
          allow get: if request.auth.uid == resource.data.buyer;
        }
        match /stock/{item} {
          allow update: if existsAfter(/databases/$(database)/documents/orders/$(request.auth.uid));
        }
      }
    }
    """

    func user(_ uid: String) -> RulesCaller {
        RulesCaller(identity: .user(uid: uid, claims: ["sub": .string(uid)]), surface: "test")
    }

    func testACommitIsJudgedAsOneAndADenialWritesNothing() async throws {
        let db = try memoryDatabase()
        let rules = SecurityRules(clock: ServerClock())
        XCTAssertTrue(rules.loadFirestore(project: testDB.project, fileName: "t.rules", source: marketplace).applied)
        _ = try await db.commit([set("stock/lamp", ["n": .integer(3)])])
        let judge = try XCTUnwrap(rules.documentJudge(testDB, caller: user("bo")))
        let order = set("orders/bo", ["item": .string("lamp"), "buyer": .string("bo")])
        let stock = set("stock/lamp", ["n": .integer(2)])
        await assertThrowsFiregate(.permissionDenied) { try await db.commit([order], judge: judge) }
        await assertThrowsFiregate(.permissionDenied) { try await db.commit([stock], judge: judge) }
        XCTAssertNil(try db.get(rpath("orders/bo")).value)
        XCTAssertEqual(try db.get(rpath("stock/lamp")).value?.fields["n"], .integer(3))
        _ = try await db.commit([order, stock], judge: judge)
        XCTAssertEqual(try db.get(rpath("stock/lamp")).value?.fields["n"], .integer(2))
        // Each decision is recorded; the last allowed the two writes by their own methods.
        let last = try XCTUnwrap(rules.decisions.decision(judge.decisionIDs.last!))
        XCTAssertEqual(last.outcome, .allow)
        XCTAssertEqual(last.evaluations.map(\.method), ["create", "update"])
        XCTAssertEqual(judge.decisionIDs.count, 3)
        // A get judged with the stored document as resource.
        let reader = try XCTUnwrap(rules.documentJudge(testDB, caller: user("cy")))
        XCTAssertThrowsError(try reader.get([(rpath("orders/bo"), try db.get(rpath("orders/bo")).value)], in: db))
        XCTAssertNoThrow(try judge.get([(rpath("orders/bo"), try db.get(rpath("orders/bo")).value)], in: db))
    }

    func testBatchWritesAreJudgedOneByOneAndTheAdminIsNotJudged() async throws {
        let db = try memoryDatabase()
        let rules = SecurityRules(clock: ServerClock())
        rules.loadFirestore(project: testDB.project, fileName: "t.rules", source: marketplace)
        XCTAssertNil(rules.documentJudge(testDB, caller: RulesCaller(identity: .admin, surface: "test")))
        XCTAssertNil(rules.documentJudge(DatabaseID(project: "other"), caller: user("bo")))
        let judge = try XCTUnwrap(rules.documentJudge(testDB, caller: user("bo")))
        let results = try await db.batchWrite([set("stock/a", ["n": .integer(1)]), set("elsewhere/b", [:])], judge: judge)
        XCTAssertEqual(results.map { (try? $0.get()) == nil }, [true, true])
        if case .failure(let error) = results[1] { XCTAssertEqual(error.message, "\nNo matching allow statements") }
    }

    func testTreeWritesAreJudgedAgainstTheTreeTheyWouldLeave() async throws {
        let (tree, _) = try makeTree()
        let rules = SecurityRules(clock: ServerClock())
        try rules.loadRealtime(namespace: "ns", source: """
        {"rules": {".read": "auth != null", "scores": {"$uid": {".write": "auth.uid === $uid",
          ".validate": "newData.isNumber() && (!data.exists() || newData.val() > data.val())"}}}}
        """)
        let judge = try XCTUnwrap(rules.treeJudge("ns", caller: user("a")))
        let at = path("/scores/a")
        func put(_ value: JSON) async throws {
            _ = try await tree.write(namespace: "ns", TreeWriteRequest(path: at, operation: .set(try TreeWriteValue.prepare(value, at: at))), judge: judge)
        }
        try await put(5)
        do {
            try await put(3)
            XCTFail("a lower score was written")
        } catch let error as FiregateError {
            XCTAssertEqual(error.httpStatus, 401)
            XCTAssertEqual(error.message, "Permission denied")
        }
        let stored = try await tree.read(namespace: "ns", path: at)
        XCTAssertEqual(render(stored), "5")
        // A stream its reader may no longer read ends with cancel when the rules change.
        let subscription = try await tree.subscribe(namespace: "ns", key: TreeStreamKey(path: path("/scores"), query: nil, format: .plain),
                                                    identity: user("a").identity)
        _ = await subscription.next()
        try rules.loadRealtime(namespace: "ns", source: #"{"rules": {".read": false}}"#)
        await tree.rejudgeStreams(namespace: "ns", rules: rules)
        let last = await subscription.next()
        XCTAssertEqual(last?.kind, .cancel)
        let end = await subscription.next()
        XCTAssertNil(end)
    }
}
