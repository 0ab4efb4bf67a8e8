@testable import FiregateBackend
import FiregateModel
import FiregateRules
import Synchronization
import XCTest

/// `DatabaseState.stage`: a commit worked out against the state without storage, and without
/// changing the state.
final class StagedCommitTests: XCTestCase {
    private let commitTime = Timestamp(microseconds: 1_700_000_000_000_000)
    private let earlier = Timestamp(microseconds: 1_600_000_000_000_000)

    private func state(_ documents: [String: [String: Value]]) -> DatabaseState {
        var state = DatabaseState()
        for (path, fields) in documents {
            state.put(Document(path: rpath(path), fields: fields, createTime: earlier, updateTime: earlier))
        }
        return state
    }

    func testALaterWriteSeesTheEarlierOneAndTheStateStaysAsItWas() throws {
        let before = state(["c/a": ["n": .integer(1)]])
        let increment = Write(path: rpath("c/a"), operation: .transform, transforms: [FieldTransform(field: fpath("n"), operation: .increment(.integer(2)))])
        let staged = try before.stage([set("c/a", ["n": .integer(5)]), increment, set("c/b", ["x": .boolean(true)])],
                                      commitTime: commitTime, database: testDB, judge: nil)
        XCTAssertEqual(staged.changes.map(\.path), [rpath("c/a"), rpath("c/b")])
        XCTAssertEqual(staged.changes[0].before?.fields, ["n": .integer(1)])
        XCTAssertEqual(staged.changes[0].after?.fields, ["n": .integer(7)])
        XCTAssertEqual(staged.changes[0].after?.createTime, earlier)
        XCTAssertNil(staged.changes[1].before)
        XCTAssertEqual(staged.results.map(\.updateTime), [commitTime, commitTime, commitTime])
        XCTAssertEqual(staged.results[1].transformResults, [.integer(7)])
        XCTAssertEqual(before.documents[rpath("c/a")]?.document.fields, ["n": .integer(1)], "staging changes nothing")
        XCTAssertNil(before.documents[rpath("c/b")])
    }

    func testWritesThatChangeNothingStageNoChange() throws {
        let before = state(["c/a": ["n": .integer(1)]])
        let staged = try before.stage([delete("c/missing"), set("c/a", ["n": .integer(1)])], commitTime: commitTime, database: testDB, judge: nil)
        XCTAssertEqual(staged.changes, [])
        XCTAssertNil(staged.results[0].updateTime)
        XCTAssertEqual(staged.results[1].updateTime, earlier, "an unchanged document keeps its update time")
    }

    func testAFailedPreconditionStagesNothing() {
        let before = state([:])
        XCTAssertThrowsError(try before.stage([set("c/a", [:]), set("c/b", [:], Precondition(exists: true))],
                                              commitTime: commitTime, database: testDB, judge: nil)) { error in
            XCTAssertEqual((error as? FiregateError)?.status, .notFound)
        }
    }

    func testTheJudgeSeesTheStoredAndTheResultingDocumentsAndMayRefuse() throws {
        let before = state(["c/a": ["n": .integer(1)]])
        let judge = RecordingJudge(refuse: false)
        let staged = try before.stage([set("c/a", ["n": .integer(2)])], commitTime: commitTime, database: testDB, judge: judge)
        XCTAssertEqual(judge.seen.withLock { $0 }, ["stored n=1", "after n=2"])
        XCTAssertNotNil(staged.judgedAfter[rpath("c/a")], "the resource the judge read is kept for the new version")
        XCTAssertThrowsError(try before.stage([set("c/a", [:])], commitTime: commitTime, database: testDB, judge: RecordingJudge(refuse: true)))
    }
}

private final class RecordingJudge: CommitJudge, @unchecked Sendable {
    let refuse: Bool
    let seen = Mutex<[String]>([])

    init(refuse: Bool) { self.refuse = refuse }

    func judge(_ writes: [Write], stored: (ResourcePath) -> RulesValue?, after: (ResourcePath) -> RulesValue?,
               commitTime: Timestamp) throws(FiregateError) {
        for write in writes {
            seen.withLock { $0.append("stored n=\(Self.n(stored(write.path)))") }
            seen.withLock { $0.append("after n=\(Self.n(after(write.path)))") }
        }
        if refuse { throw FiregateError(.permissionDenied, "refused") }
    }

    func settle() {}

    private static func n(_ resource: RulesValue?) -> String {
        guard case .map(let fields)? = resource, case .map(let data)? = fields["data"], case .int(let n)? = data["n"] else { return "none" }
        return "\(n)"
    }
}
