import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import XCTest

private let client = "/clients/ix"
private let clientDocs = "/clients/ix/v1/projects/p/databases/(default)/documents"
private let planHeader = HTTPField.Name("Firegate-Query-Plan")!
private let readHeader = HTTPField.Name("Firegate-Documents-Read")!

private func itemsQuery(_ filter: String, orderBy: String? = nil, limit: Int? = nil) -> String {
    var members = [#""from":[{"collectionId":"items"}]"#, #""where":"# + filter]
    if let orderBy { members.append(#""orderBy":"# + orderBy) }
    if let limit { members.append(#""limit":"# + String(limit)) }
    return #"{"structuredQuery":{"# + members.joined(separator: ",") + "}}"
}

/// The document ids of a runQuery answer, in order.
private func names(_ reply: Reply) -> [String] {
    reply.json?.arrayValue?.compactMap { $0["document"]?["name"]?.stringValue.map { String($0.split(separator: "/").last!) } } ?? []
}

private let kindIsA = #"{"fieldFilter":{"field":{"fieldPath":"kind"},"op":"EQUAL","value":{"stringValue":"a"}}}"#
private let byRank = #"[{"field":{"fieldPath":"rank"},"direction":"DESCENDING"}]"#

/// Local indexes through HTTP: configuration, plans, auto creation, deletion.
final class LocalIndexRoutesTests: XCTestCase {
    /// 120 items cached through the client (kind a for every tenth), then offline.
    static func seed(_ client: any TestClientProtocol, clientID: String = "ix") async throws {
        var writes: [String] = []
        for i in 0..<120 {
            writes.append(#"{"update":{"name":"\#(root)/items/i\#(i)","fields":{"kind":{"stringValue":"\#(i % 10 == 0 ? "a" : "b")"},"rank":{"integerValue":"\#(i)"}}}}"#)
        }
        _ = try await client.send(.post, "\(base):commit", #"{"writes":[\#(writes.joined(separator: ","))]}"#)
        let all = #"{"structuredQuery":{"from":[{"collectionId":"items"}]}}"#
        let online = try await client.send(.post, "/clients/\(clientID)/v1/projects/p/databases/(default)/documents:runQuery", all)
        XCTAssertEqual(online.headers[planHeader], "remote")
        _ = try await client.send(.post, "/clients/\(clientID):disableNetwork")
    }

    func testConfiguredIndexServesTheQueryWithTheSameResult() async throws {
        try await withServer { client, _ in
            try await Self.seed(client)
            let body = itemsQuery(kindIsA, orderBy: byRank, limit: 3)
            let scanned = try await client.send(.post, "\(clientDocs):runQuery", body)
            XCTAssertEqual(scanned.headers[planHeader], "scan")
            XCTAssertEqual(scanned.headers[readHeader], "120")

            assertError(try await client.send(.put, "/clients/ix/indexes", #"{"indexes":[{"collectionGroup":"items","fields":[{"fieldPath":"kind","order":"SIDEWAYS"}]}]}"#),
                        400, "INVALID_ARGUMENT", contains: "indexes[0].fields[0].order")
            let configured = try await client.send(.put, "/clients/ix/indexes", #"""
                {"indexes":[{"collectionGroup":"items","queryScope":"COLLECTION","fields":[{"fieldPath":"kind","order":"ASCENDING"},{"fieldPath":"rank","order":"DESCENDING"}]}],"fieldOverrides":[]}
                """#)
            XCTAssertEqual(configured.status, 200, configured.text)
            XCTAssertEqual(configured.json?["entries"], 120)

            let indexed = try await client.send(.post, "\(clientDocs):runQuery", body)
            XCTAssertEqual(indexed.headers[planHeader], "index")
            XCTAssertEqual(indexed.headers[readHeader], "3", "index order is the query's order: three reads for three results")
            XCTAssertEqual(names(indexed), names(scanned))
            XCTAssertEqual(names(indexed), ["i110", "i100", "i90"])

            // An offline write shows at once, through the index path too.
            _ = try await client.send(.patch, "\(clientDocs)/items/i5", #"{"fields":{"kind":{"stringValue":"a"},"rank":{"integerValue":"1000"}}}"#)
            let withWrite = try await client.send(.post, "\(clientDocs):runQuery", body)
            XCTAssertEqual(withWrite.headers[planHeader], "index")
            XCTAssertEqual(withWrite.json?.arrayValue?.first?["document"]?["name"]?.stringValue, "\(root)/items/i5")

            let deleted = try await client.send(.delete, "/clients/ix/indexes")
            XCTAssertEqual(deleted.json?["indexes"], [])
            let again = try await client.send(.post, "\(clientDocs):runQuery", body)
            XCTAssertEqual(again.headers[planHeader], "scan")
            XCTAssertEqual(names(again), names(withWrite))
        }
    }

    func testAutoCreationOnlyPastTheSDKsHeuristics() async throws {
        try await withServer { client, _ in
            try await Self.seed(client)
            let selective = itemsQuery(kindIsA)
            let first = try await client.send(.post, "\(clientDocs):runQuery", selective)
            XCTAssertEqual(first.headers[planHeader], "scan", first.text)
            let stillNone = try await client.send(.get, "/clients/ix/indexes")
            XCTAssertEqual(stillNone.json?["indexes"], [], "auto creation is off by default")

            _ = try await client.send(.post, "/clients/ix/indexes:enableAutoCreation")
            // 120 read for 108 results: not worth an index (120 ≤ 3.4 × 108).
            let broad = #"{"fieldFilter":{"field":{"fieldPath":"kind"},"op":"EQUAL","value":{"stringValue":"b"}}}"#
            _ = try await client.send(.post, "\(clientDocs):runQuery", itemsQuery(broad))
            let afterBroad = try await client.send(.get, "/clients/ix/indexes")
            XCTAssertEqual(afterBroad.json?["indexes"], [])
            // 120 read for 12 results: create {kind ASC}.
            _ = try await client.send(.post, "\(clientDocs):runQuery", selective)
            let created = try await client.send(.get, "/clients/ix/indexes")
            XCTAssertEqual(created.json?["indexes"]?.arrayValue?.first?["fields"], [["fieldPath": "kind", "order": "ASCENDING"]])
            XCTAssertEqual(created.json?["indexes"]?.arrayValue?.first?["autoCreated"], true)
            let next = try await client.send(.post, "\(clientDocs):runQuery", selective)
            XCTAssertEqual(next.headers[planHeader], "index")
            XCTAssertEqual(next.headers[readHeader], "12")
            XCTAssertEqual(names(next), names(first))
        }
    }

    func testSmallCollectionsAndMemoryCachesNeverIndex() async throws {
        try await withServer { client, _ in
            _ = try await client.send(.put, "/clients/mem", #"{"persistence":"memory","garbageCollector":"lru"}"#)
            try await Self.seed(client, clientID: "mem")
            let configured = try await client.send(.put, "/clients/mem/indexes", #"{"indexes":[{"collectionGroup":"items","fields":[{"fieldPath":"kind","order":"ASCENDING"}]}]}"#)
            XCTAssertEqual(configured.json?["used"], false, "a memory cache accepts the configuration and ignores it")
            let answer = try await client.send(.post, "/clients/mem/v1/projects/p/databases/(default)/documents:runQuery", itemsQuery(kindIsA))
            XCTAssertEqual(answer.headers[planHeader], "scan")

            _ = try await client.send(.post, "\(base)/small?documentId=one", #"{"fields":{"kind":{"stringValue":"a"}}}"#)
            _ = try await client.send(.post, "\(clientDocs):runQuery", #"{"structuredQuery":{"from":[{"collectionId":"small"}]}}"#)
            _ = try await client.send(.post, "/clients/ix:disableNetwork")
            _ = try await client.send(.post, "/clients/ix/indexes:enableAutoCreation")
            let small = #"{"structuredQuery":{"from":[{"collectionId":"small"}],"where":\#(kindIsA)}}"#
            _ = try await client.send(.post, "\(clientDocs):runQuery", small)
            let none = try await client.send(.get, "/clients/ix/indexes")
            XCTAssertEqual(none.json?["indexes"], [], "fewer than 100 documents read")
            assertError(try await client.send(.put, "/clients/ix/indexes", "[]"), 400, "INVALID_ARGUMENT")
        }
    }
}
