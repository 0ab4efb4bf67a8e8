import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import FiregateProto
import FiregateTestSupport
import Foundation
import XCTest

/// The Listen stream's state machine without a transport: what each request and commit sends.
final class ListenTargetsTests: XCTestCase {
    func kinds(_ responses: [ListenResponse]) -> [String] {
        responses.map { response in
            switch response.responseType {
            case .targetChange(let change)?: "\(change.targetChangeType)\(change.targetIds)"
            case .documentChange(let change)?: "change \(change.document.name.split(separator: "/").last!)"
            case .documentDelete(let delete)?: "delete \(delete.document.split(separator: "/").last!)"
            case .documentRemove(let remove)?: "remove \(remove.document.split(separator: "/").last!)"
            case .filter(let filter)?: "filter \(filter.count)"
            case nil: "?"
            }
        }
    }

    func queryTarget(_ id: Int32, collection: String = "c", once: Bool = false) -> Google_Firestore_V1_Target {
        var target = Google_Firestore_V1_Target()
        target.targetID = id
        target.once = once
        var query = Google_Firestore_V1_Target.QueryTarget()
        query.parent = testDB.documentsRoot
        query.structuredQuery.from = [.with { $0.collectionID = collection }]
        target.query = query
        return target
    }

    func add(_ target: Google_Firestore_V1_Target) -> Google_Firestore_V1_ListenRequest {
        var request = Google_Firestore_V1_ListenRequest()
        request.database = testDB.name
        request.addTarget = target
        return request
    }

    func testAddSendsTheResultThenCurrentThenAGlobalSnapshotAndCommitsFollow() async throws {
        let backend = try await Backend.inMemory()
        let database = backend.documents.database(testDB)
        _ = try await database.commit([setWrite("c/a", ["n": .integer(1)])])
        let subscription = database.feed.subscribe(bufferLimit: 100)
        var targets = ListenTargets(database: database, startingAfter: subscription.startsAfter)
        XCTAssertEqual(kinds(try targets.handle(add(queryTarget(7)))), ["add[7]", "change a", "current[7]", "noChange[]"])

        let commit = try await database.commit([setWrite("c/b", ["n": .integer(2)]), setWrite("other/x", [:])])
        _ = commit
        guard case .commit(let record)? = await subscription.next() else { return XCTFail("no commit") }
        XCTAssertEqual(kinds(targets.apply(record)), ["change b", "noChange[]"])

        _ = try await database.commit([setWrite("other/y", [:])])
        guard case .commit(let untouched)? = await subscription.next() else { return XCTFail("no commit") }
        XCTAssertEqual(kinds(targets.apply(untouched)), [], "a commit outside every target sends nothing")

        _ = try await database.commit([Write(path: try ResourcePath.parse("c/a"), operation: .delete)])
        guard case .commit(let deletion)? = await subscription.next() else { return XCTFail("no commit") }
        XCTAssertEqual(kinds(targets.apply(deletion)), ["delete a", "noChange[]"])
        subscription.cancel()
    }

    /// A target added after commits the stream has not processed yet waits for them before the
    /// global snapshot: every target must reflect the same commit.
    func testTheGlobalSnapshotWaitsUntilEveryTargetReflectsTheSameCommit() async throws {
        let backend = try await Backend.inMemory()
        let database = backend.documents.database(testDB)
        let subscription = database.feed.subscribe(bufferLimit: 100)
        var targets = ListenTargets(database: database, startingAfter: subscription.startsAfter)
        _ = try await database.commit([setWrite("c/a", ["n": .integer(1)])])
        XCTAssertEqual(kinds(try targets.handle(add(queryTarget(1)))), ["add[1]", "change a", "current[1]"])
        guard case .commit(let record)? = await subscription.next() else { return XCTFail("no commit") }
        XCTAssertEqual(kinds(targets.apply(record)), ["noChange[]"], "the commit is in the target already; now the stream is consistent")
        subscription.cancel()
    }

    func testBadTargetsAreRemovedWithACauseAndOnceTargetsEndAfterTheirSnapshot() async throws {
        let backend = try await Backend.inMemory()
        let database = backend.documents.database(testDB)
        var targets = ListenTargets(database: database, startingAfter: database.feed.lastPublished)
        var bad = queryTarget(3)
        bad.query.structuredQuery.from = []
        let removed = try targets.handle(add(bad))
        XCTAssertEqual(kinds(removed), ["remove[3]"])
        XCTAssertEqual(removed.first?.targetChange.cause.code, 3)

        XCTAssertEqual(kinds(try targets.handle(add(queryTarget(4, once: true)))), ["add[4]", "current[4]", "noChange[]", "remove[4]"])
        XCTAssertEqual(targets.count, 0)
        XCTAssertEqual(kinds(try targets.handle(add(queryTarget(0)))), ["add[1]", "current[1]", "noChange[]"], "0 asks the server to assign an id")
        XCTAssertEqual(kinds(try targets.handle(add(queryTarget(1)))), ["remove[1]"], "an id in use is refused")
        var other = add(queryTarget(9))
        other.database = "projects/else/databases/(default)"
        XCTAssertThrowsError(try targets.handle(other))
    }

    func testAResumeTokenSendsOnlyWhatChangedSinceAndAnExistenceFilter() async throws {
        let backend = try await Backend.inMemory()
        let database = backend.documents.database(testDB)
        _ = try await database.commit([setWrite("c/a", ["n": .integer(1)]), setWrite("c/b", ["n": .integer(1)])])
        let token = database.resumeToken(sequence: database.feed.lastPublished)
        _ = try await database.commit([setWrite("c/b", ["n": .integer(2)]), Write(path: try ResourcePath.parse("c/a"), operation: .delete)])
        var targets = ListenTargets(database: database, startingAfter: database.feed.lastPublished)
        var target = queryTarget(2)
        target.resumeToken = Data(token.utf8)
        XCTAssertEqual(kinds(try targets.handle(add(target))), ["add[2]", "remove a", "change b", "filter 1", "current[2]", "noChange[]"])
        target.resumeToken = Data("stale.1".utf8)
        target.targetID = 5
        XCTAssertEqual(kinds(try targets.handle(add(target))), ["add[5]", "reset[5]", "change b", "filter 1", "current[5]", "noChange[]"])
    }

    func documentsTarget(_ id: Int32, _ paths: [String]) -> Google_Firestore_V1_Target {
        var target = Google_Firestore_V1_Target()
        target.targetID = id
        target.documents.documents = paths.map { "\(testDB.documentsRoot)/\($0)" }
        return target
    }

    /// Streams of one shape share a commit's answer: the shape follows what the targets are
    /// (ids and documents), and a stream moved on by a shared answer answers the next commit as
    /// one that worked it out itself.
    func testTheShapeFollowsTheTargetsAndASharedAnswerMovesAStreamOnAsItsOwnWould() async throws {
        let backend = try await Backend.inMemory()
        let database = backend.documents.database(testDB)
        _ = try await database.commit([setWrite("c/a", ["n": .integer(1)])])
        let subscription = database.feed.subscribe(bufferLimit: 100)
        var first = ListenTargets(database: database, startingAfter: subscription.startsAfter)
        var second = first
        _ = try first.handle(add(documentsTarget(2, ["c/a"])))
        _ = try second.handle(add(documentsTarget(2, ["c/a"])))

        _ = try await database.commit([setWrite("c/a", ["n": .integer(2)])])
        guard case .commit(let record)? = await subscription.next() else { return XCTFail("no commit") }
        let shape = try XCTUnwrap(first.shape(for: record))
        XCTAssertEqual(second.shape(for: record), shape)
        let answer = first.apply(record)
        XCTAssertEqual(kinds(answer), ["change a", "noChange[]"])
        second.apply(record, sharing: ListenTimeline.Steps(answer))
        second.adopt(shape)
        XCTAssertNil(first.shape(for: record), "a commit already applied is not shared again")

        _ = try await database.commit([setWrite("c/a", ["n": .integer(3)])])
        guard case .commit(let next)? = await subscription.next() else { return XCTFail("no commit") }
        XCTAssertEqual(first.shape(for: next), second.shape(for: next))
        XCTAssertEqual(first.apply(next), second.apply(next), "the shared answer moved the second stream on as its own would")

        _ = try await database.commit([setWrite("c/a", ["n": .integer(4)])])
        guard case .commit(let third)? = await subscription.next() else { return XCTFail("no commit") }
        let before = try XCTUnwrap(first.shape(for: third))
        _ = try first.handle(add(documentsTarget(3, ["c/b"])))
        XCTAssertNil(first.shape(for: third), "a target added since reflects a commit the stream has not applied yet")
        _ = first.apply(third)
        _ = try first.handle(Google_Firestore_V1_ListenRequest.with { $0.database = testDB.name; $0.removeTarget = 3 })
        _ = try await database.commit([setWrite("c/a", ["n": .integer(5)])])
        guard case .commit(let fourth)? = await subscription.next() else { return XCTFail("no commit") }
        XCTAssertEqual(first.shape(for: fourth), before, "the same targets again: the same shape")
        _ = try first.handle(add(queryTarget(4)))
        _ = first.apply(fourth)
        _ = try await database.commit([setWrite("c/a", ["n": .integer(6)])])
        guard case .commit(let fifth)? = await subscription.next() else { return XCTFail("no commit") }
        XCTAssertNil(first.shape(for: fifth), "a query target is not shared")
        subscription.cancel()
    }

    /// The snapshot step a shared answer records is the one the stream would record itself,
    /// also when the stream carries changes in from responses before it.
    func testASharedSnapshotStepIsTheStreamsOwn() {
        let timelines = Timelines(clock: ServerClock())
        func change(_ id: String) -> ListenResponse {
            var response = ListenResponse()
            response.documentChange = .with {
                $0.document.name = "projects/p/databases/(default)/documents/rooms/\(id)"
                $0.targetIds = [2]
            }
            return response
        }
        var snapshot = ListenResponse()
        snapshot.targetChange = .with { $0.targetChangeType = .noChange }
        let commit = ListenTimeline.Steps([change("a"), snapshot, change("b"), change("c"), snapshot])
        var fresh = ListenTimeline(timelines.open(kind: "connection", name: "fresh", protocol: "webchannel", project: "p", action: "opened"))
        var carrying = ListenTimeline(timelines.open(kind: "connection", name: "carrying", protocol: "webchannel", project: "p", action: "opened"))
        fresh.observe(commit)
        carrying.observe([change("z")])
        carrying.observe(commit)
        func steps(_ name: String) -> [String] {
            var filter = TimelineFilter()
            filter.lanes = ["connection:\(name)"]
            filter.kinds = [.snapshot]
            return timelines.events(filter).map { event in
                let changes = event.fields.first { $0.0 == "changes" }.map { "\($0.1)" } ?? "?"
                return "\(changes) " + event.changed.map(\.path).joined(separator: ",")
            }
        }
        XCTAssertEqual(steps("fresh"), ["\(JSON.int(1)) rooms/a", "\(JSON.int(2)) rooms/b,rooms/c"])
        XCTAssertEqual(steps("carrying"), ["\(JSON.int(2)) rooms/z,rooms/a", "\(JSON.int(2)) rooms/b,rooms/c"])
    }

    func testTheTimelineNamesDocumentsByTheirPathUnderTheDatabase() {
        XCTAssertEqual(ListenTimeline.path("projects/p/databases/(default)/documents/cities/SF"), "cities/SF")
        XCTAssertEqual(ListenTimeline.path("projects/p/databases/d/documents/é/ü/documents/x"), "é/ü/documents/x")
        XCTAssertEqual(ListenTimeline.path("no/marker/here"), "no/marker/here")
        XCTAssertEqual(ListenTimeline.path("/documents/"), "")
        XCTAssertEqual(ListenTimeline.path(""), "")
    }
}
