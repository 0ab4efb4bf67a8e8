@testable import FiregateHTTP
import HTTPTypes
import XCTest

/// The `/clients/{id}` route table: a request matches at most one route, so no entry depends on
/// coming before another.
final class ClientRouteTableTests: XCTestCase {
    private func matches(_ method: HTTPRequest.Method, _ subpath: String) -> [String] {
        ClientRoutes.subroutes.compactMap { route in route.match(method, subpath).map { _ in "\(route.method) \(route.pattern)" } }
    }

    func testEveryRouteIsTheOnlyOneItsRequestsMatch() {
        var seen = Set<String>()
        for route in ClientRoutes.subroutes {
            XCTAssertTrue(seen.insert("\(route.method) \(route.pattern)").inserted, "\(route.pattern) is declared twice")
            let sample = route.pattern.replacingOccurrences(of: #"\{[^}]*\}"#, with: "x1", options: .regularExpression)
            XCTAssertEqual(matches(route.method, sample), ["\(route.method) \(route.pattern)"], sample)
        }
    }

    func testAParameterIsOneWholeSegment() {
        XCTAssertEqual(matches(.get, "/pendingWrites/t3"), ["GET /pendingWrites/{writeId}"], "a tree write's id")
        XCTAssertEqual(matches(.get, "/pendingWrites/3"), ["GET /pendingWrites/{writeId}"])
        XCTAssertEqual(matches(.get, "/pendingWrites"), ["GET /pendingWrites"])
        XCTAssertEqual(matches(.get, "/pendingWrites/"), [])
        XCTAssertEqual(matches(.get, "/pendingWrites/3/x"), [])
        XCTAssertEqual(matches(.post, "/pendingWrites/3"), [])
        XCTAssertEqual(ClientRoutes.subroutes.first { $0.pattern == "/namedQueries/{name}" }?.match(.get, "/namedQueries/big%20cities"), "big%20cities")
    }

    func testVerbsAreDeclaredOnce() {
        XCTAssertEqual(Set(ClientRoutes.verbs.keys), ["disableNetwork", "enableNetwork", "restart", "terminate", "clearPersistence",
                                                      "waitForPendingWrites", "runTimer", "loadBundle", "collectGarbage"])
    }
}
