@testable import FiregateEdge
import FiregateModel
import XCTest

/// The sync engine's query side on its own, through its verbs.
final class QueryStatesTests: XCTestCase {
    let database = DatabaseID(project: "p")

    func add(_ queries: inout QueryStates, _ listenerID: Int, _ collection: String, cacheOnly: Bool = false) {
        let query = Query(collectionID: collection)
        var options = ListenerOptions()
        options.cacheOnly = cacheOnly
        queries.add(listenerID, query: query, options: options, view: QueryView(query: query, database: database))
    }

    func testAQueryListensToTheServerWhileOneOfItsListenersDoes() {
        var queries = QueryStates()
        let cities = Query(collectionID: "cities").targetCanonicalID
        add(&queries, 1, "cities", cacheOnly: true)
        XCTAssertFalse(queries.listensToServer(cities))
        add(&queries, 2, "cities")
        add(&queries, 3, "towns")
        XCTAssertTrue(queries.listensToServer(cities))
        XCTAssertEqual(queries.serverListenerIDs, [2, 3])
        XCTAssertEqual(Set(queries.serverQueries.keys), [cities, Query(collectionID: "towns").targetCanonicalID])

        queries.remove(queryID: cities)
        XCTAssertEqual(Array(queries.states.keys), [3])
        XCTAssertNotNil(queries.remove(3))
        XCTAssertNil(queries.remove(3))
    }

    func testAServerResultMakesTheServerListenersCurrentAndANewListenerSharesIt() {
        var queries = QueryStates()
        let cities = Query(collectionID: "cities").targetCanonicalID
        add(&queries, 1, "cities", cacheOnly: true)
        add(&queries, 2, "cities")
        queries.setCurrent(true, queryID: cities, serverOnly: true)
        XCTAssertEqual(queries.states[1]?.current, false)
        XCTAssertEqual(queries.states[2]?.current, true)
        XCTAssertTrue(queries.isCurrent(cities))
        add(&queries, 3, "cities")
        XCTAssertEqual(queries.states[3]?.current, true, "a listener of a current target starts current")

        // Watch's word on the target reaches every listener of the query.
        queries.setCurrent(false, queryID: cities)
        XCTAssertFalse(queries.states.values.contains { $0.current })
        queries.setCurrent(true, queryID: cities)
        XCTAssertTrue(queries.states.values.allSatisfy(\.current))
        queries.markAllNotCurrent()
        XCTAssertFalse(queries.states.values.contains { $0.current })
    }

    func testAViewChangesInPlaceAndOnlyThere() {
        var queries = QueryStates()
        add(&queries, 1, "cities")
        let doc = Document(path: ResourcePath(["cities", "sf"]), fields: [:], createTime: Timestamp(seconds: 1, nanos: 0),
                           updateTime: Timestamp(seconds: 1, nanos: 0))
        let snapshot = queries.updateView(of: 1) { entry in
            entry.view.update(result: [LocalDocument(document: doc, hasLocalMutations: false, hasCommittedMutations: false)], current: true, hasCachedResults: false)
        }
        XCTAssertEqual(snapshot??.documents.map(\.document.path), [doc.path])
        XCTAssertEqual(queries.states[1]?.view.documents.map(\.document.path), [doc.path])
        XCTAssertNil(queries.updateView(of: 9) { _ in 1 })
    }
}
