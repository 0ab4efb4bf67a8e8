import FiregateModel
import HummingbirdTesting
import XCTest

@testable import FiregateHTTP

/// Tabs of a shared web persistence through HTTP: one cache and queue, the primary owns the
/// network, the lease moves by the SDK's rules, and bad requests are 4xx.
private func open(_ client: any TestClientProtocol, _ id: String, key: String = "db", extra: String = "") async throws -> Reply {
    try await client.send(.put, "/clients/\(id)", #"{"platform":"web","persistence":"persistent","sharedWith":"\#(key)"\#(extra)}"#)
}

private func tab(_ client: any TestClientProtocol, _ id: String) async throws -> JSON {
    let reply = try await client.send(.get, "/clients/\(id)")
    return try XCTUnwrap(reply.json?["tab"], reply.text)
}

final class TabRoutesTests: XCTestCase {
    func testTabsShareTheQueueAndOnlyThePrimarySendsIt() async throws {
        try await withServer { client, backend in
            let a = try await open(client, "A")
            XCTAssertEqual(a.status, 200, a.text)
            XCTAssertEqual(a.json?["tab"]?["primary"], .bool(true))
            XCTAssertEqual(a.json?["id"], .string("A"))
            let bPrimary = try await open(client, "B").json?["tab"]?["primary"]
            XCTAssertEqual(bPrimary, .bool(false))
            let activeTabs = try await tab(client, "B")["activeTabs"]
            XCTAssertEqual(activeTabs, .int(2))

            // The primary's network off: its listeners' online state goes, and the lease with it.
            _ = try await client.send(.post, "/clients/A:disableNetwork")
            let holderAfterOffline = try await tab(client, "A")["primaryTab"]
            XCTAssertEqual(holderAfterOffline, .null)
            let write = try await client.send(.patch, "/clients/B\(base)/c/d", #"{"fields":{"v":{"integerValue":"1"}}}"#)
            XCTAssertEqual(write.status, 200, write.text)
            let pendingA = try await client.send(.get, "/clients/A/pendingWrites")
            XCTAssertEqual(pendingA.json?["writes"]?.arrayValue?.count, 1, "A sees B's write in the shared queue")
            let cached = try await client.send(.get, "/clients/A\(base)/c/d?source=cache")
            XCTAssertEqual(cached.json?["fields"]?["v"], ["integerValue": "1"])
            XCTAssertNil(try backend.documents.database(testDB).get(ResourcePath(["c", "d"])).value, "nobody sent it")

            // B refreshes and takes the lease: it sends the write.
            let ran = try await client.send(.post, "/clients/B:runTimer", #"{"timer":"client_metadata_refresh"}"#)
            XCTAssertEqual(ran.json?["ran"], ["client_metadata_refresh"])
            let bPrimaryAfterRefresh = try await tab(client, "B")["primary"]
            XCTAssertEqual(bPrimaryAfterRefresh, .bool(true))
            let flushed = try await client.send(.post, "/clients/A:waitForPendingWrites?timeoutMs=10000")
            XCTAssertEqual(flushed.status, 200, flushed.text)
            XCTAssertNotNil(try backend.documents.database(testDB).get(ResourcePath(["c", "d"])).value)
        }
    }

    func testSingleTabPersistenceAndBadTabRequests() async throws {
        try await withServer { client, _ in
            let soloStatus = try await open(client, "S", key: "solo", extra: #","tabManager":"single""#).status
            XCTAssertEqual(soloStatus, 200)
            let second = try await open(client, "T", key: "solo")
            assertError(second, 412, "FAILED_PRECONDITION", contains: "Failed to obtain exclusive access to the persistence layer.")
            let listsRefusedTab = try await client.send(.get, "/clients").json?["clients"]?.arrayValue?.compactMap { $0["id"]?.stringValue }.contains("T")
            XCTAssertEqual(listsRefusedTab, false,
                           "the refused tab was not opened")

            assertError(try await client.send(.put, "/clients/X", #"{"sharedWith":"k","persistence":"memory","platform":"web"}"#),
                        400, "INVALID_ARGUMENT", contains: "sharedWith needs")
            assertError(try await client.send(.put, "/clients/X", #"{"sharedWith":7}"#), 400, "INVALID_ARGUMENT")
            assertError(try await open(client, "X", key: "k", extra: #","tabManager":"some""#), 400, "INVALID_ARGUMENT")
            assertError(try await open(client, "X", key: "k", extra: #","visible":"yes""#), 400, "INVALID_ARGUMENT")
            let xStatus = try await open(client, "X", key: "k").status
            XCTAssertEqual(xStatus, 200)
            assertError(try await open(client, "X", key: "k"), 412, "FAILED_PRECONDITION", contains: "already open")
            assertError(try await client.send(.post, "/clients/X:setVisibility", #"{"visible":1}"#), 400, "INVALID_ARGUMENT")
            assertError(try await client.send(.post, "/clients/X:restart"), 412, "FAILED_PRECONDITION")
        }
    }

    func testClosingTheHolderFreesTheLeaseAndClearingThePersistenceShutsTheOthersDown() async throws {
        try await withServer { client, _ in
            _ = try await open(client, "A", extra: #","visible":false"#)
            _ = try await open(client, "B", extra: #","visible":false"#)
            _ = try await open(client, "C", extra: #","visible":true"#)
            let closeStatus = try await client.send(.delete, "/clients/A").status
            XCTAssertEqual(closeStatus, 200)
            _ = try await client.send(.post, "/clients/B:runTimer", #"{"timer":"client_metadata_refresh"}"#)
            let holderAfterBRefresh = try await tab(client, "B")["primaryTab"]
            XCTAssertEqual(holderAfterBRefresh, .null, "hidden B defers to visible C")
            _ = try await client.send(.post, "/clients/C:setVisibility", #"{"visible":false}"#)
            let cPrimary = try await tab(client, "C")["primary"]
            XCTAssertEqual(cPrimary, .bool(true), "C refreshes on the change and takes it")
            // clearPersistence() from a terminated tab shuts the others down and empties the cache.
            _ = try await client.send(.patch, "/clients/C\(base)/c/kept", #"{"fields":{}}"#)
            assertError(try await client.send(.post, "/clients/B:clearPersistence"), 412, "FAILED_PRECONDITION", contains: "after it is terminated")
            let terminateStatus = try await client.send(.post, "/clients/B:terminate").status
            XCTAssertEqual(terminateStatus, 200)
            let terminated = try await client.send(.get, "/clients/B")
            XCTAssertEqual(terminated.json?["terminated"], .bool(true), terminated.text)
            assertError(try await client.send(.get, "/clients/B\(base)/c/kept"), 412, "FAILED_PRECONDITION", contains: "terminated")
            let cleared = try await client.send(.post, "/clients/B:clearPersistence")
            XCTAssertEqual(cleared.status, 200, cleared.text)
            let shutDown = try await client.send(.get, "/clients/C")
            XCTAssertEqual(shutDown.json?["terminated"], .bool(true), "C was shut down by the clear")
            let listed = try await client.send(.get, "/clients").json?["clients"]?.arrayValue ?? []
            XCTAssertTrue(listed.allSatisfy { $0["tab"] == nil }, "no tab is left open")
            _ = try await open(client, "D")
            // The new persistence starts empty: a cache read of the document misses.
            assertError(try await client.send(.get, "/clients/D\(base)/c/kept?source=cache"), 503, "UNAVAILABLE", contains: "Failed to get document from cache")
        }
    }
}
