import FiregateBackend
import FiregateModel
@testable import FiregatePostgres
import FiregateStore
import XCTest

/// A replica that loads a database after its commits were made (a follower that starts to
/// serve it, a replica that restarted) takes the log's window as its history, before-images
/// included, so it resumes tokens and reads at times from before the load as the writer does.
final class LoggedHistoryTests: XCTestCase {
    private let id = DatabaseID(project: "p", database: "(default)")
    private let query = Query(collectionID: "c")

    private func write(_ path: String, _ n: Int64?) -> Write {
        let resource = ResourcePath(path.split(separator: "/").map(String.init))
        guard let n else { return Write(path: resource, operation: .delete) }
        return Write(path: resource, operation: .update(fields: ["n": .integer(n)], mask: nil))
    }

    private func names(_ documents: [Document]?) -> [String] {
        (documents ?? []).map(\.path.lastSegment).sorted()
    }

    func testALateReplicaResumesATokenFromBeforeItLoadedTheDatabase() async throws {
        let database = try TestDatabase()
        let a = try database.store("a"), b = try database.store("b")
        defer { a.close(); b.close() }
        let onA = try DocumentBackend(storage: PostgresDocumentStorage(store: a), clock: ServerClock()).database(id)
        for (path, n) in [("c/x", 1), ("c/y", 2), ("c/z", 3)] { _ = try await onA.commit([write(path, Int64(n))]) }
        let token = onA.resumeToken(sequence: onA.currentSequence)
        _ = try await onA.commit([write("c/x", 10)])
        _ = try await onA.commit([write("c/y", nil)])
        _ = try await onA.commit([write("c/w", 4), write("c/z", 30)])
        // B loads the database only now.
        let onB = try DocumentBackend(storage: PostgresDocumentStorage(store: b), clock: ServerClock()).database(id)
        XCTAssertEqual(onB.currentSequence, 6)
        let seq = try XCTUnwrap(onB.sequence(fromResumeToken: token), "the token's generation is the log's on every replica")
        let start = onB.listen(query, bufferLimit: 10, resumeAfter: seq)
        start.subscription.cancel()
        XCTAssertEqual(names(start.resumedWindow), ["x", "y", "z"], "the window as of the token, undone from the log")
        XCTAssertEqual(start.resumedWindow?.first { $0.path.lastSegment == "x" }?.fields["n"], .integer(1))
        XCTAssertEqual(names(start.matches.window), ["w", "x", "z"])
        let document = onB.listen(document: ResourcePath(["c", "y"]), bufferLimit: 10, resumeAfter: seq)
        document.subscription.cancel()
        XCTAssertEqual(document.resumedDocument??.fields["n"], .integer(2), "y existed then")
    }

    func testHistoryStartsAfterAClearOrARowLoggedWithoutBeforeImages() async throws {
        let database = try TestDatabase()
        let a = try database.store("a")
        defer { a.close() }
        let onA = try DocumentBackend(storage: PostgresDocumentStorage(store: a), clock: ServerClock()).database(id)
        for n in 1...3 { _ = try await onA.commit([write("c/x", Int64(n))]) }
        let storage = PostgresDocumentStorage(store: a)
        XCTAssertEqual(storage.loggedCommits(id, through: 3) { _ in nil }.map(\.seq), [1, 2, 3])
        XCTAssertEqual(storage.loggedCommits(id, through: 3) { _ in nil }.last?.befores.first?.fields["n"], .integer(2))
        XCTAssertEqual(storage.loggedCommits(id, through: 2) { _ in nil }.map(\.seq), [1, 2], "up to the loaded position only")
        // A row as an older Firegate logged it (no before-images) cannot be undone.
        try database.sql("UPDATE fg_log SET body = convert_to(convert_from(body, 'UTF8')::jsonb - 'before' #>> '{}', 'UTF8') WHERE seq = 2")
        XCTAssertEqual(storage.loggedCommits(id, through: 3) { _ in nil }.map(\.seq), [3])
        try await onA.reset()
        _ = try await onA.commit([write("c/x", 9)])
        let head = onA.currentSequence
        XCTAssertEqual(storage.loggedCommits(id, through: head) { _ in nil }.map(\.seq), [head], "nothing from before the clear")
    }
}
