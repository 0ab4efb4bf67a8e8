@testable import FiregateModel
import FiregateTestSupport
import XCTest

final class DocumentChangeSetTests: XCTestCase {
    let byA = Query(collectionID: "c", orderBy: [.init(field: fpath("a"))])

    func doc(_ id: String, _ a: Int64, time: Int64 = 1) -> Document { makeDoc("c/\(id)", ["a": .integer(a)], time: time) }

    func summary(_ changes: [ViewChange]) -> [String] {
        changes.map { "\($0.kind.rawValue) \($0.document.path.lastSegment) \($0.oldIndex)→\($0.newIndex)" }
    }

    /// Replays changes on `old` the way an SDK consumer would; must give `new`.
    func replay(_ changes: [ViewChange], on old: [Document]) -> [Document] {
        var list = old
        for change in changes {
            if change.oldIndex >= 0 {
                XCTAssertEqual(list[change.oldIndex].path, change.document.path, "oldIndex points at another document")
                list.remove(at: change.oldIndex)
            }
            if change.newIndex >= 0 { list.insert(change.document, at: change.newIndex) }
        }
        return list
    }

    func testFirstSnapshotIsAllAdded() {
        let new = [doc("x", 1), doc("y", 2)]
        XCTAssertEqual(summary(DocumentChangeSet.changes(from: [], to: new, query: byA, database: testDB)), ["added x -1→0", "added y -1→1"])
        XCTAssertEqual(DocumentChangeSet.changes(from: [], to: [], query: byA, database: testDB), [])
    }

    func testModifiedDocumentMovesUnderOrderBy() {
        let old = [doc("x", 1), doc("y", 2), doc("z", 3)]
        let new = [doc("y", 2), doc("z", 3), doc("x", 4, time: 2)]
        let changes = DocumentChangeSet.changes(from: old, to: new, query: byA, database: testDB)
        XCTAssertEqual(summary(changes), ["modified x 0→2"])
        XCTAssertEqual(replay(changes, on: old), new)
    }

    func testRemovedThenAddedThenModified() {
        let old = [doc("a", 1), doc("b", 2), doc("c", 3)]
        let new = [doc("d", 0), doc("a", 1), doc("c", 5, time: 2)]
        let changes = DocumentChangeSet.changes(from: old, to: new, query: byA, database: testDB)
        XCTAssertEqual(summary(changes), ["removed b 1→-1", "added d -1→0", "modified c 2→2"])
        XCTAssertEqual(replay(changes, on: old), new)
    }

    func testUnchangedDocumentsAreNotReported() {
        let old = [doc("a", 1), doc("b", 2)]
        XCTAssertEqual(DocumentChangeSet.changes(from: old, to: old, query: byA, database: testDB), [])
        XCTAssertEqual(summary(DocumentChangeSet.changes(from: old, to: [doc("b", 2)], query: byA, database: testDB)), ["removed a 0→-1"])
        XCTAssertEqual(DocumentChangeSet.changes(from: old, to: [], query: byA, database: testDB).map(\.newIndex), [-1, -1])
    }

    func testDocumentsHoldingNaNAreNotReportedAsModifiedForNothing() {
        let withNaN = makeDoc("c/a", ["a": .integer(1), "x": .double(.nan)])
        let b = doc("b", 2), b2 = doc("b", 3, time: 2)
        // Built separately, as the same stored document read twice may be (no shared storage).
        let again = makeDoc("c/a", ["a": .integer(1), "x": .double(.nan)])
        XCTAssertEqual(withNaN, again, "a document equals itself, NaN fields included")
        let changes = DocumentChangeSet.changes(from: [withNaN, b], to: [again, b2], query: byA, database: testDB)
        XCTAssertEqual(summary(changes), ["modified b 1→1"])
    }

    func testGroupsAreEachInQueryOrder() {
        let old = [doc("a", 1), doc("b", 2), doc("c", 3), doc("d", 4)]
        let new = [doc("e", 0), doc("b", 2), doc("f", 5), doc("g", 6)]
        let changes = DocumentChangeSet.changes(from: old, to: new, query: byA, database: testDB)
        XCTAssertEqual(summary(changes), ["removed a 0→-1", "removed c 1→-1", "removed d 1→-1", "added e -1→0", "added f -1→2", "added g -1→3"])
        XCTAssertEqual(replay(changes, on: old), new)
    }

    func testRandomChangesReplayToTheNewResult() {
        var generator = SplitMix64(seed: 11)
        let query = Query(collectionID: "c", orderBy: [.init(field: fpath("a"), descending: true)])
        for round in 0..<300 {
            let ids = (0..<8).map { "d\($0)" }
            let old = query.matchingSorted(ids.filter { _ in Bool.random(using: &generator) }.map { doc($0, Int64.random(in: 0..<4, using: &generator)) }, database: testDB)
            let new = query.matchingSorted(ids.filter { _ in Bool.random(using: &generator) }.map { id in
                if let previous = old.first(where: { $0.path.lastSegment == id }), Bool.random(using: &generator) { return previous }
                return doc(id, Int64.random(in: 0..<4, using: &generator), time: Int64(round + 2))
            }, database: testDB)
            let changes = DocumentChangeSet.changes(from: old, to: new, query: query, database: testDB)
            XCTAssertEqual(replay(changes, on: old), new, "round \(round)")
            let kinds = changes.map(\.kind)
            let rank: [ViewChange.Kind: Int] = [.removed: 0, .added: 1, .modified: 2]
            XCTAssertEqual(kinds.map { rank[$0]! }, kinds.map { rank[$0]! }.sorted(), "round \(round): groups out of order")
        }
    }
}

final class QueryMatchesTests: XCTestCase {
    /// Random queries over a tiny value space, random writes; the incrementally maintained match
    /// set must always equal a full recompute with `Query.run`.
    func testIncrementalUpdatesEqualFullRecompute() {
        var generator = SplitMix64(seed: 2024)
        let valuePool: [Value?] = [nil, .null, .integer(0), .integer(1), .double(1), .double(2.5), .double(.nan), .string("a"), .string("b"),
                                   .array([.integer(1)]), .array([.string("a"), .integer(2)]), .boolean(true)]
        let collections = ["c", "other", "p/1/c"]
        let ids = (0..<10).map { "d\($0)" }
        func randomValue() -> Value? { valuePool.randomElement(using: &generator)! }
        func randomFilter(depth: Int = 0) -> Query.Filter {
            let field = fpath(["a", "b"].randomElement(using: &generator)!)
            switch Int.random(in: 0..<(depth < 2 ? 9 : 7), using: &generator) {
            case 0: return .field(field, [.equal, .lessThan, .greaterThanOrEqual, .notEqual, .arrayContains].randomElement(using: &generator)!,
                                  randomValue() ?? .integer(1))
            case 1: return .field(field, .in, .array([.integer(1), .string("a")]))
            case 2: return .field(field, .notIn, .array([.integer(0), .string("b")]))
            case 3: return .field(field, .arrayContainsAny, .array([.integer(1), .integer(2)]))
            case 4: return .unary(field, [.isNull, .isNaN, .isNotNull, .isNotNaN].randomElement(using: &generator)!)
            case 5: return .field(field, .greaterThan, .integer(0))
            case 6: return .field(.documentID, .greaterThanOrEqual, .reference(docName("c/d3")))
            default: return .composite(Bool.random(using: &generator) ? .and : .or, (0..<2).map { _ in randomFilter(depth: depth + 1) })
            }
        }
        func randomQuery() -> Query {
            var query = Query(collectionID: "c", allDescendants: Int.random(in: 0..<4, using: &generator) == 0)
            if Bool.random(using: &generator) { query.filter = randomFilter() }
            if Bool.random(using: &generator) {
                query.explicitOrderBy = [Query.Ordering(field: fpath(["a", "b"].randomElement(using: &generator)!), descending: Bool.random(using: &generator))]
            }
            if Int.random(in: 0..<3, using: &generator) == 0 { query.startAt = .init(values: [randomValue() ?? .integer(1)], before: Bool.random(using: &generator)) }
            if Int.random(in: 0..<3, using: &generator) == 0 { query.endAt = .init(values: [randomValue() ?? .integer(1)], before: Bool.random(using: &generator)) }
            if Bool.random(using: &generator) { query.limit = Int.random(in: 0..<5, using: &generator) }
            if Int.random(in: 0..<3, using: &generator) == 0 { query.offset = Int.random(in: 0..<3, using: &generator) }
            if query.limit != nil, Int.random(in: 0..<4, using: &generator) == 0 { query.limitToLast = true; query.offset = 0 }
            return query
        }
        for round in 0..<200 {
            let query = randomQuery()
            var store: [ResourcePath: Document] = [:]
            var time: Int64 = 1
            func randomDocument(_ path: ResourcePath) -> Document {
                var fields: [String: Value] = [:]
                if let a = randomValue() { fields["a"] = a }
                if let b = randomValue() { fields["b"] = b }
                let createTime = store[path]?.createTime ?? Timestamp(microseconds: time)
                return Document(path: path, fields: fields, createTime: createTime, updateTime: Timestamp(microseconds: time))
            }
            for _ in 0..<6 {
                let path = rpath("\(collections.randomElement(using: &generator)!)/\(ids.randomElement(using: &generator)!)")
                store[path] = randomDocument(path)
            }
            var matches = QueryMatches(query: query, database: testDB, candidates: store.values)
            for step in 0..<40 {
                time += 1
                let path = rpath("\(collections.randomElement(using: &generator)!)/\(ids.randomElement(using: &generator)!)")
                let before = store[path]
                let after: Document? = Int.random(in: 0..<4, using: &generator) == 0 ? nil : randomDocument(path)
                store[path] = after
                matches.apply(path: path, before: before, after: after)
                let expected = query.matchingSorted(store.values, database: testDB)
                XCTAssertEqual(matches.sorted.map(\.path), expected.map(\.path), "round \(round) step \(step) query \(query)")
                XCTAssertEqual(matches.sorted, expected)
                XCTAssertEqual(matches.window, query.run(over: store.values, database: testDB).documents)
                if matches.sorted != expected { return }
            }
        }
    }

    func testApplyReportsWhetherTheMatchSetChanged() {
        let query = Query(collectionID: "c", filter: .field(fpath("a"), .greaterThan, .integer(1)))
        var matches = QueryMatches(query: query, database: testDB, candidates: [makeDoc("c/x", ["a": .integer(5)])])
        XCTAssertFalse(matches.apply(path: rpath("other/y"), before: nil, after: makeDoc("other/y", ["a": .integer(5)])))
        XCTAssertFalse(matches.apply(path: rpath("c/y"), before: nil, after: makeDoc("c/y", ["a": .integer(0)])))
        XCTAssertTrue(matches.apply(path: rpath("c/y"), before: makeDoc("c/y", ["a": .integer(0)]), after: makeDoc("c/y", ["a": .integer(3)])))
        XCTAssertEqual(matches.sorted.map(\.path.lastSegment), ["y", "x"])
        XCTAssertTrue(matches.apply(path: rpath("c/x"), before: makeDoc("c/x", ["a": .integer(5)]), after: nil))
        XCTAssertEqual(matches.sorted.map(\.path.lastSegment), ["y"])
    }
}
