@testable import FiregatePostgres
import FiregateModel
import PostgresNIO
import FiregateStore
import XCTest

/// What one run of queued units writes; no server needed.
final class CommitPlanTests: XCTestCase {
    private func document(_ path: String, _ n: Int64, at micros: Int64) -> Document {
        Document(path: ResourcePath(ResourcePath.segments(of: path)), fields: ["n": .integer(n)],
                 createTime: Timestamp(microseconds: micros), updateTime: Timestamp(microseconds: micros))
    }

    func testEachBatchTakesTheNextSeqOfItsScopeAndAPathWrittenTwiceIsWrittenOnceAsItEnds() {
        let leases = ScopeLeases(replicaID: "r1", leaseSeconds: 10)
        let db = DatabaseID(project: "p", database: "(default)")
        leases.loaded("d:p/(default)", seq: 7, generation: "g1")
        leases.acquired("d:p/(default)", epoch: 3)
        let units: [PostgresCommitQueue.Unit] = [
            .documents(DocumentPersistBatch(database: db, upserts: [document("c/a", 1, at: 10), document("c/b", 1, at: 10)], deletes: []), { _ in }),
            .documents(DocumentPersistBatch(database: db, upserts: [document("c/a", 2, at: 20)], deletes: [ResourcePath(["c", "b"])]), { _ in }),
            // Changes no document: no commit of the scope, no log row, as the engine counts none.
            .documents(DocumentPersistBatch(database: db, upserts: [], deletes: []), { _ in }),
            .tree([TreeStorageBatch(namespace: "ns", operations: [.putRow(TreeStorageRow(path: "x", value: "1", priority: nil))])], { _ in }),
        ]
        let plan = CommitPlan(units: units, leases: leases, now: 99)
        XCTAssertEqual(plan.log.map(\.scope), ["d:p/(default)", "d:p/(default)", "t:ns"])
        XCTAssertEqual(plan.log.map(\.seq), [8, 9, 1])
        XCTAssertEqual(plan.log.map(\.commitUs), [10, 20, 99])
        XCTAssertEqual(plan.heads.map(\.scope), ["d:p/(default)", "t:ns"])
        XCTAssertEqual(plan.heads.map(\.oldSeq), [7, 0])
        XCTAssertEqual(plan.heads.map(\.newSeq), [9, 1])
        XCTAssertEqual(plan.heads.map(\.epoch), [3, -1], "a scope not held carries no epoch, so its fence fails")
        XCTAssertEqual(plan.upserts.map(\.path), ["c/a"])
        XCTAssertEqual(plan.upserts.first?.updateUs, 20)
        XCTAssertEqual(plan.deletes.map(\.path), ["c/b"])
        XCTAssertTrue(plan.needsTransaction)
    }

    func testTreeRowOperationsKeepTheirOrderAndMergeNeighbours() {
        let statements = TreeRowStatements.statements(for: [
            .deleteSubtree("a"),
            .putRow(TreeStorageRow(path: "a/x", value: "1", priority: nil)),
            .putRow(TreeStorageRow(path: "a/x", value: "2", priority: nil)),
            .putRow(TreeStorageRow(path: "a/y", value: nil, priority: "3")),
            .deleteRow("b"),
            .deleteRow("c"),
            .deleteSubtree(""),
        ], scope: "t:ns")
        XCTAssertEqual(statements.count, 4)
        XCTAssertTrue(statements[0].sql.contains("path >="), statements[0].sql)
        XCTAssertTrue(statements[1].sql.hasPrefix("INSERT INTO fg_tree_rows"), statements[1].sql)
        XCTAssertTrue(statements[2].sql.contains("ANY"), statements[2].sql)
        XCTAssertEqual(statements[3].sql, "DELETE FROM fg_tree_rows WHERE scope = $1")
    }
}
