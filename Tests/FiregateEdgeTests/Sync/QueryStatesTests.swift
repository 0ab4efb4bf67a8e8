@testable import FiregateEdge
import FiregateModel
import XCTest

/// The sync engine's query side on its own.
final class QueryStatesTests: XCTestCase {
    let database = DatabaseID(project: "p")

    func state(_ collection: String, cacheOnly: Bool = false, current: Bool = true) -> QueryState {
        let query = Query(collectionID: collection)
        var options = ListenerOptions()
        options.cacheOnly = cacheOnly
        return QueryState(query: query, queryID: query.targetCanonicalID, options: options, view: QueryView(query: query, database: database),
                          current: current)
    }

    func testAQueryListensToTheServerWhileOneOfItsListenersDoes() {
        var queries = QueryStates()
        let cities = state("cities")
        queries.states[1] = state("cities", cacheOnly: true)
        XCTAssertFalse(queries.listensToServer(cities.queryID))
        queries.states[2] = cities
        queries.states[3] = state("towns")
        XCTAssertTrue(queries.listensToServer(cities.queryID))

        queries.markAllNotCurrent()
        XCTAssertFalse(queries.states.values.contains { $0.current })
        queries.remove(queryID: cities.queryID)
        XCTAssertEqual(Array(queries.states.keys), [3])
    }
}
