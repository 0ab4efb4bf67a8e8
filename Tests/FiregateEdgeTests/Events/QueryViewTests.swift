import FiregateModel
import XCTest

@testable import FiregateEdge

final class QueryViewTests: XCTestCase {
    let database = DatabaseID(project: "p")
    let t0 = Timestamp(seconds: 1000, nanos: 0)

    func doc(_ id: String, _ n: Int64, local: Bool = false, committed: Bool = false) -> LocalDocument {
        LocalDocument(document: Document(path: ResourcePath(["c", id]), fields: ["n": .integer(n)], createTime: t0, updateTime: t0),
                      hasLocalMutations: local, hasCommittedMutations: committed)
    }

    var query: Query { Query(collectionID: "c", orderBy: [.init(field: FieldPath(["n"]))]) }

    func testFirstUpdateAlwaysYieldsASnapshotEvenWhenEmpty() {
        var view = QueryView(query: query, database: database)
        let snapshot = view.update(result: [], current: false, hasCachedResults: false)
        XCTAssertNotNil(snapshot)
        XCTAssertEqual(snapshot?.fromCache, true)
        XCTAssertEqual(snapshot?.syncStateChanged, true)
        XCTAssertNil(view.update(result: [], current: false, hasCachedResults: false), "nothing changed the second time")
    }

    func testSyncStateFlipIsASnapshotWithoutChanges() {
        var view = QueryView(query: query, database: database)
        _ = view.update(result: [doc("a", 1)], current: false, hasCachedResults: false)
        let snapshot = view.update(result: [doc("a", 1)], current: true, hasCachedResults: false)
        XCTAssertEqual(snapshot?.changes, [])
        XCTAssertEqual(snapshot?.fromCache, false)
        XCTAssertEqual(snapshot?.syncStateChanged, true)
    }

    func testPendingFlagFlipIsAMetadataChange() {
        var view = QueryView(query: query, database: database)
        _ = view.update(result: [doc("a", 1, local: true)], current: true, hasCachedResults: false)
        XCTAssertEqual(view.mutatedPaths, [ResourcePath(["c", "a"])])
        let snapshot = view.update(result: [doc("a", 1)], current: true, hasCachedResults: false)
        XCTAssertEqual(snapshot?.changes.map(\.kind), [.metadata])
        XCTAssertEqual(snapshot?.hasPendingWrites, false)
    }

    func testAcknowledgedWriteWaitsForTheWatchBeforeShowingNewData() {
        var view = QueryView(query: query, database: database)
        _ = view.update(result: [doc("a", 1, local: true)], current: true, hasCachedResults: false)
        // The committed version differs (say a server timestamp resolved) but watch has not confirmed it.
        let held = view.update(result: [doc("a", 2, committed: true)], current: true, hasCachedResults: false)
        XCTAssertNil(held, "the SDK suppresses this intermediate state")
        XCTAssertEqual(view.documents.first?.document.fields["n"], .integer(1))
        let synced = view.update(result: [doc("a", 2)], current: true, hasCachedResults: false)
        XCTAssertEqual(synced?.changes.map(\.kind), [.modified])
        XCTAssertEqual(synced?.hasPendingWrites, false)
    }

    func testCommittedDocumentStaysPendingForAViewThatSawTheLocalWrite() {
        var view = QueryView(query: query, database: database)
        _ = view.update(result: [doc("a", 1, local: true)], current: true, hasCachedResults: false)
        let snapshot = view.update(result: [doc("a", 1, committed: true)], current: true, hasCachedResults: false)
        XCTAssertNil(snapshot, "same data, still pending: nothing to raise")
        XCTAssertTrue(view.mutatedPaths.contains(ResourcePath(["c", "a"])))
        // A new view never saw the local write: the committed document is not pending there.
        var fresh = QueryView(query: query, database: database)
        let first = fresh.update(result: [doc("a", 1, committed: true)], current: true, hasCachedResults: false)
        XCTAssertEqual(first?.hasPendingWrites, false)
    }

    func testIndexesFollowTheSDKsDocChangesRules() {
        var view = QueryView(query: query, database: database)
        _ = view.update(result: [doc("a", 1), doc("b", 2), doc("c", 3)], current: true, hasCachedResults: false)
        // b moves to the end, a is removed, d is added first.
        let snapshot = view.update(result: [doc("d", 0), doc("c", 3), doc("b", 4)], current: true, hasCachedResults: false)
        let changes = snapshot!.changes.map { ($0.kind, $0.document.document.path.lastSegment, $0.oldIndex, $0.newIndex) }
        XCTAssertEqual(changes.count, 3)
        XCTAssertTrue(changes[0] == (.removed, "a", 0, -1))
        XCTAssertTrue(changes[1] == (.added, "d", -1, 0))
        XCTAssertTrue(changes[2] == (.modified, "b", 1, 2))
    }

    func testLimitKeepsTheWindow() {
        var limited = query
        limited.limit = 2
        var view = QueryView(query: limited, database: database)
        _ = view.update(result: [doc("a", 1), doc("b", 2)], current: true, hasCachedResults: false)
        let snapshot = view.update(result: [doc("b", 2), doc("c", 3)], current: true, hasCachedResults: false)
        XCTAssertEqual(snapshot?.changes.map(\.kind), [.removed, .added])
        XCTAssertEqual(view.documents.map(\.document.path.lastSegment), ["b", "c"])
    }

    /// `apply(changed:…)` with only the changed documents gives exactly the snapshot and the
    /// view that `update(result:…)` gives with the whole result, over random changes: values
    /// moving the order, documents entering and leaving, pending and acknowledged flags.
    func testIncrementalUpdateMatchesTheFullUpdate() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<40 {
            var full = QueryView(query: query, database: database)
            var incremental = QueryView(query: query, database: database)
            var state: [String: LocalDocument] = [:]
            for i in 0..<20 where Bool.random(using: &generator) { state["d\(i)"] = doc("d\(i)", Int64.random(in: 0..<10, using: &generator)) }
            let result = { state.values.sorted { self.query.compare($0.document, $1.document, database: self.database) < 0 } }
            _ = full.update(result: result(), current: true, hasCachedResults: false)
            _ = incremental.update(result: result(), current: true, hasCachedResults: false)
            for step in 0..<30 {
                var touched = Set<String>()
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    let id = "d\(Int.random(in: 0..<20, using: &generator))"
                    switch Int.random(in: 0..<4, using: &generator) {
                    case 0: state[id] = nil
                    case 1: state[id] = doc(id, Int64.random(in: 0..<10, using: &generator), local: true)
                    case 2: state[id] = state[id].map { doc(id, $0.document.fields["n"].flatMap { if case .integer(let n) = $0 { n } else { nil } } ?? 0, committed: true) }
                    default: state[id] = doc(id, Int64.random(in: 0..<10, using: &generator))
                    }
                    touched.insert(id)
                }
                let changed = touched.map { (ResourcePath(["c", $0]), state[$0]) }
                let current = step % 7 != 3
                let a = full.update(result: result(), current: current, hasCachedResults: false)
                let b = incremental.apply(changed: changed, current: current, hasCachedResults: false)
                let label = "round \(round) step \(step)"
                XCTAssertEqual(a?.changes, b?.changes, label)
                XCTAssertEqual(a?.fromCache, b?.fromCache, label)
                XCTAssertEqual(a?.mutatedPaths, b?.mutatedPaths, label)
                XCTAssertEqual(full.documents, incremental.documents, label)
                XCTAssertEqual(full.mutatedPaths, incremental.mutatedPaths, label)
            }
        }
    }

    func testOnlyUnwindowedViewsUpdateIncrementally() {
        XCTAssertTrue(QueryView(query: query, database: database).updatesIncrementally)
        var limited = query
        limited.limit = 2
        XCTAssertFalse(QueryView(query: limited, database: database).updatesIncrementally)
        var skipping = query
        skipping.offset = 1
        XCTAssertFalse(QueryView(query: skipping, database: database).updatesIncrementally)
    }

    /// A modification that keeps its place moves nothing; one that moves far shifts only the
    /// documents between; either way the indexes are those of a removal then an insertion.
    func testIncrementalMovesGiveTheFullUpdatesIndexes() {
        var state = (0..<50).map { doc("d\($0)", Int64($0 * 10)) }
        var full = QueryView(query: query, database: database)
        var incremental = QueryView(query: query, database: database)
        _ = full.update(result: state, current: true, hasCachedResults: false)
        _ = incremental.update(result: state, current: true, hasCachedResults: false)
        // (document, new value): stays in place, to the end, to the front, one step on, one step back.
        for (index, value) in [(10, 101), (3, 1000), (40, -5), (20, 215), (30, 285)] {
            let id = "d\(index)"
            state.removeAll { $0.path == ResourcePath(["c", id]) }
            state.append(doc(id, Int64(value)))
            state.sort { query.compare($0.document, $1.document, database: database) < 0 }
            let a = full.update(result: state, current: true, hasCachedResults: false)
            let b = incremental.apply(changed: [(ResourcePath(["c", id]), doc(id, Int64(value)))], current: true, hasCachedResults: false)
            XCTAssertEqual(a?.changes, b?.changes, "\(id) → \(value)")
            XCTAssertEqual(b?.changes.first?.newIndex, state.firstIndex { $0.path == ResourcePath(["c", id]) }, "\(id) → \(value)")
            XCTAssertEqual(full.documents, incremental.documents, "\(id) → \(value)")
        }
    }
}
