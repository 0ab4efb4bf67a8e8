import FiregateModel
import FiregateTestSupport
import XCTest

@testable import FiregateEdge

/// Local query indexes: configuration parsing, which index serves which query, and — the
/// property that matters — identical results with and without indexes.
final class LocalIndexesTests: XCTestCase {
    let database = DatabaseID(project: "p")
    let t = Timestamp(seconds: 100, nanos: 0)

    func field(_ name: String) -> FieldPath { FieldPath([name]) }

    func testConfigurationErrorsNameTheMember() {
        func message(_ json: JSON) -> String? {
            do { _ = try IndexConfiguration.parse(json); return nil } catch { return error.message }
        }
        XCTAssertEqual(try IndexConfiguration.parse(["indexes": []]), [])
        XCTAssertTrue(message(["indexes": 3])?.contains("indexes must be an array") ?? false)
        XCTAssertTrue(message(["indexes": [["fields": []]]])?.contains("indexes[0].collectionGroup") ?? false)
        XCTAssertTrue(message(["indexes": [["collectionGroup": "c", "fields": [["order": "ASCENDING"]]]]])?.contains("indexes[0].fields[0].fieldPath") ?? false)
        XCTAssertTrue(message(["indexes": [["collectionGroup": "c", "fields": [["fieldPath": "a..b", "order": "ASCENDING"]]]]])?.contains("Invalid field path") ?? false)
        XCTAssertTrue(message(["indexes": [["collectionGroup": "c", "fields": [["fieldPath": "a", "order": "UP"]]]]])?.contains("indexes[0].fields[0].order") ?? false)
        XCTAssertTrue(message(["indexes": [["collectionGroup": "c", "fields": [["fieldPath": "a", "arrayConfig": "ANY"]]]]])?.contains("arrayConfig") ?? false)
        XCTAssertTrue(message(["indexes": [], "fieldOverrides": "x"])?.contains("fieldOverrides") ?? false)
        XCTAssertEqual(try? IndexConfiguration.parse(["indexes": [["collectionGroup": "c", "fields": [["fieldPath": "a", "order": nil, "arrayConfig": "CONTAINS"]]]]]),
                       [FieldIndex(collectionGroup: "c", segments: [.init(field: field("a"), kind: .contains)])], "null counts as absent")
        let parsed = try? IndexConfiguration.parse(["indexes": [["collectionGroup": "c", "queryScope": "COLLECTION_GROUP", "fields": [
            ["fieldPath": "tags", "arrayConfig": "CONTAINS"], ["fieldPath": "a.b", "order": "DESCENDING"], ["fieldPath": "v", "vectorConfig": ["dimension": 3]],
        ]]], "fieldOverrides": []])
        XCTAssertEqual(parsed, [FieldIndex(collectionGroup: "c", segments: [.init(field: field("tags"), kind: .contains),
                                                                              .init(field: FieldPath(["a", "b"]), kind: .descending)])])
    }

    func testIndexChoiceFollowsTheMatcherRules() {
        let eqThenRange = Query(collectionID: "c", filter: .composite(.and, [.field(field("a"), .equal, .integer(1)), .field(field("b"), .greaterThan, .integer(2))]))
        let ab = FieldIndex(collectionGroup: "c", segments: [.init(field: field("a"), kind: .ascending), .init(field: field("b"), kind: .ascending)])
        let ba = FieldIndex(collectionGroup: "c", segments: [.init(field: field("b"), kind: .ascending), .init(field: field("a"), kind: .ascending)])
        let a = FieldIndex(collectionGroup: "c", segments: [.init(field: field("a"), kind: .ascending)])
        let target = IndexTarget(eqThenRange)!
        XCTAssertNotNil(target.match(ab))
        XCTAssertEqual(target.match(ab)?.ordered, true)
        XCTAssertNil(target.match(ba), "the range field must come after the equalities")
        XCTAssertEqual(target.match(a)?.ordered, false, "a partial index serves, without early stop")
        var indexes = LocalIndexes()
        indexes.configure([a, ab], documents: [:], database: database)
        XCTAssertEqual(indexes.choose(for: eqThenRange)?.0, ab, "the most segments wins")
        let twoRanges = Query(collectionID: "c", filter: .composite(.and, [.field(field("a"), .greaterThan, .integer(1)), .field(field("b"), .lessThan, .integer(2))]))
        XCTAssertNil(IndexTarget(twoRanges), "several inequality fields are never served")
        let or = Query(collectionID: "c", filter: .composite(.or, [.field(field("a"), .equal, .integer(1)), .field(field("b"), .equal, .integer(2))]))
        XCTAssertNil(IndexTarget(or))
        let desc = Query(collectionID: "c", filter: .field(field("a"), .equal, .integer(1)), orderBy: [.init(field: field("b"), descending: true)])
        XCTAssertNil(IndexTarget(desc)!.match(ab), "an ordering must match the segment's direction")
        XCTAssertEqual(IndexTarget(desc)!.autoIndex(), FieldIndex(collectionGroup: "c", segments: [
            .init(field: field("a"), kind: .ascending), .init(field: field("b"), kind: .descending)]))
    }

    /// Random documents, writes (remote and pending local), index configurations and queries:
    /// every query answers the same through an index as by a scan.
    func testIndexedResultsEqualScannedResults() {
        var rng = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &rng)
        var random = SplitMix64(seed: seed)
        let fields = ["a", "b", "c"]
        func value() -> Value {
            switch random.next() % 8 {
            case 0: .null
            case 1: .string(["x", "y", "z"][Int(random.next() % 3)])
            case 2: .double(Double(random.next() % 5) + 0.5)
            case 3: .array((0..<Int(random.next() % 3)).map { _ in .integer(Int64(random.next() % 4)) })
            default: .integer(Int64(random.next() % 6))
            }
        }
        func document(_ i: Int) -> Document {
            var fieldsValue: [String: Value] = [:]
            for name in fields where random.next() % 5 != 0 { fieldsValue[name] = value() }
            fieldsValue["tags"] = .array((0..<Int(random.next() % 3)).map { _ in .integer(Int64(random.next() % 4)) })
            return Document(path: ResourcePath(["c", String(format: "d%03d", i)]), fields: fieldsValue, createTime: t, updateTime: t)
        }
        func randomIndex() -> FieldIndex {
            var segments: [FieldIndex.Segment] = []
            if random.next() % 4 == 0 { segments.append(.init(field: field("tags"), kind: .contains)) }
            for name in fields.shuffled(using: &random).prefix(Int(random.next() % 3) + 1) {
                segments.append(.init(field: field(name), kind: random.next() % 3 == 0 ? .descending : .ascending))
            }
            return FieldIndex(collectionGroup: "c", segments: segments)
        }
        func randomQuery() -> Query {
            var filters: [Query.Filter] = []
            var used = Set<String>()
            for _ in 0..<Int(random.next() % 3) {
                let name = fields[Int(random.next() % 3)]
                guard used.insert(name).inserted else { continue }
                let ops: [Query.FieldOperator] = [.equal, .equal, .in, .lessThan, .greaterThanOrEqual, .notEqual]
                let op = ops[Int(random.next() % UInt64(ops.count))]
                if op == .in { filters.append(.field(field(name), .in, .array([.integer(1), .integer(Int64(random.next() % 6)), .string("x")]))) } else {
                    filters.append(.field(field(name), op, value()))
                }
            }
            if random.next() % 4 == 0 { filters.append(.field(field("tags"), .arrayContains, .integer(Int64(random.next() % 4)))) }
            var orderBy: [Query.Ordering] = []
            if random.next() % 2 == 0 { orderBy.append(.init(field: field(fields[Int(random.next() % 3)]), descending: random.next() % 2 == 0)) }
            let limit: Int? = random.next() % 2 == 0 ? Int(random.next() % 5) + 1 : nil
            let filter: Query.Filter? = filters.isEmpty ? nil : (filters.count == 1 ? filters[0] : .composite(.and, filters))
            var query = Query(collectionID: "c", filter: filter, orderBy: orderBy, offset: random.next() % 4 == 0 ? 1 : 0, limit: limit)
            if random.next() % 5 == 0, limit != nil { query.limitToLast = true; query.offset = 0 }
            if random.next() % 5 == 0, let first = query.orderBy.first, !first.field.isDocumentID {
                query.startAt = Query.Bound(values: [value()], before: random.next() % 2 == 0)
            }
            return query
        }

        var remote = RemoteDocumentCache()
        var queue = MutationQueue()
        var indexed = 0
        for round in 0..<40 {
            if round % 10 == 0 {
                remote.indexes.configure((0..<3).map { _ in randomIndex() }, documents: remote.entries, database: database)
            }
            for _ in 0..<15 {
                let i = Int(random.next() % 60)
                if random.next() % 6 == 0 {
                    remote.set(ResourcePath(["c", String(format: "d%03d", i)]), random.next() % 2 == 0 ? nil : .missing(version: t))
                } else {
                    remote.set(ResourcePath(["c", String(format: "d%03d", i)]), .found(document(i), committed: false))
                }
            }
            if random.next() % 2 == 0 {
                let i = Int(random.next() % 60)
                _ = queue.add(writes: [Write(path: ResourcePath(["c", String(format: "d%03d", i)]), operation: .update(fields: document(i).fields, mask: nil))], localWriteTime: t)
            }
            if random.next() % 4 == 0, let first = queue.first { queue.remove(first.id) }
            remote.indexes.compact()
            let view = LocalViewBuilder(database: database, remote: remote, queue: queue)
            for _ in 0..<25 {
                let query = randomQuery()
                let withIndex = view.execute(query, useIndexes: true)
                let scan = view.execute(query, useIndexes: false)
                if withIndex.plan == .index { indexed += 1 }
                XCTAssertEqual(withIndex.documents.map(\.document.path), scan.documents.map(\.document.path),
                               "seed \(seed): \(query)")
                if withIndex.documents.map(\.document.path) != scan.documents.map(\.document.path) { return }
            }
        }
        XCTAssertGreaterThan(indexed, 20, "seed \(seed): the indexes served queries")
    }
}
