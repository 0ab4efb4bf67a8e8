import FiregateBackend
import FiregateEdge
@testable import FiregateHTTP
import FiregateModel
import FiregateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import XCTest

/// WebChannel sessions through the responder (docs/webchannel.md): the handshake, a long poll,
/// CORS on channel answers, and the expiry of a session the page abandoned.
final class WebChannelRoutesTests: XCTestCase {
    static let channel = "/google.firestore.v1.Firestore/Listen/channel"
    static let database = "projects%2Fp%2Fdatabases%2F(default)"

    static func withResponder(_ test: @escaping @Sendable (any TestClientProtocol, FiregateResponder) async throws -> Void) async throws {
        let backend = try await Backend.inMemory(extraMigrations: EdgeClients.migrations)
        let responder = FiregateServer.makeResponder(backend: backend, clients: EdgeClients(backend: backend))
        let app = Application(responder: responder, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.router) { client in try await test(client, responder) }
    }

    static func open(_ client: any TestClientProtocol, origin: String? = nil) async throws -> (Reply, String) {
        let message = #"{"database":"projects/p/databases/(default)","addTarget":{"documents":{"documents":["projects/p/databases/(default)/documents/c/d"]},"targetId":2}}"#
        let body = "headers=" + "X-Firebase-GMPID:1:1:web:t\r\n".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            + "&count=1&ofs=0&req0___data__=" + message.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if let origin { headers[.origin] = origin }
        let reply = try await client.send(.post, "\(Self.channel)?VER=8&database=\(Self.database)&RID=1&CVER=22&zx=a&t=1", body, headers: headers)
        XCTAssertEqual(reply.status, 200, reply.text)
        let lines = reply.text.split(separator: "\n", maxSplits: 1)
        XCTAssertEqual(Int(lines[0]), lines[1].utf16.count)
        let array = try XCTUnwrap(JSONParser.parse(Array(lines[1].utf8)).arrayValue?.first?.arrayValue)
        XCTAssertEqual(array[0], 0)
        let c = try XCTUnwrap(array[1].arrayValue)
        XCTAssertEqual(c[0], "c")
        XCTAssertEqual(c[3], 8)
        return (reply, try XCTUnwrap(c[1].stringValue))
    }

    func testAHandshakeThenALongPollBringsTheTargetAndCORSMarksEveryAnswer() async throws {
        try await Self.withResponder { client, _ in
            let origin = "http://localhost:3000"
            let (reply, sid) = try await Self.open(client, origin: origin)
            XCTAssertEqual(reply.headers[.accessControlAllowOrigin], origin)
            XCTAssertEqual(reply.headers[.accessControlAllowCredentials], "true")
            XCTAssertEqual(reply.headers[.contentType], "text/plain; charset=utf-8")
            var text = ""
            for _ in 0..<5 where !text.contains("CURRENT") {
                let poll = try await client.send(.get, "\(Self.channel)?VER=8&database=\(Self.database)&RID=rpc&SID=\(sid)&AID=0&CI=1&TO=5000&TYPE=xmlhttp",
                                                 headers: [.origin: origin])
                XCTAssertEqual(poll.status, 200)
                XCTAssertEqual(poll.headers[.accessControlAllowOrigin], origin)
                text += poll.text
            }
            XCTAssertTrue(text.contains(#"[1,[{"targetChange":{"targetChangeType":"ADD","targetIds":[2]}}]]"#), text)
            XCTAssertTrue(text.contains(#""documentDelete""#) || text.contains(#""CURRENT""#), text)
            let terminate = try await client.send(.post, "\(Self.channel)?VER=8&SID=\(sid)&RID=9&TYPE=terminate", "")
            XCTAssertEqual(terminate.status, 200)
        }
    }

    func testAnAbandonedSessionExpiresAndLeavesTheRegistry() async throws {
        try await Self.withResponder { client, responder in
            let (_, sid) = try await Self.open(client)
            let registered = responder.operations.connections.connections.filter { $0.protocol == "firestore-webchannel" }
            XCTAssertEqual(registered.map(\.appId), ["1:1:web:t"])
            // Not yet: a minute has not gone.
            XCTAssertTrue(responder.webChannel.sessions.sweep(now: .now))
            XCTAssertEqual(responder.webChannel.sessions.count, 1)
            _ = responder.webChannel.sessions.sweep(now: .now + WebChannelDirectory.idleTimeout + .seconds(1))
            XCTAssertEqual(responder.webChannel.sessions.count, 0)
            let poll = try await client.send(.get, "\(Self.channel)?VER=8&RID=rpc&SID=\(sid)&AID=0&CI=1&TYPE=xmlhttp")
            XCTAssertEqual(poll.status, 400)
            XCTAssertGreaterThan(poll.text.range(of: "Unknown SID").map { poll.text.distance(from: poll.text.startIndex, to: $0.lowerBound) } ?? -1, 0)
            await waitUntil("the session leaves the registry") {
                responder.operations.connections.connections.allSatisfy { $0.protocol != "firestore-webchannel" }
            }
        }
    }

    func testAPreflightIsAnsweredBeforeTheAdminTokenIsAsked() async throws {
        try await withServer(configure: { $0.adminToken = "s3cret" }) { client, _ in
            let preflight = try await client.send(.options, "/emulator/v1/connections/network", headers: [
                .origin: "http://localhost:5173", HTTPField.Name("Access-Control-Request-Method")!: "PUT",
                HTTPField.Name("Access-Control-Request-Headers")!: "authorization,content-type",
            ])
            XCTAssertEqual(preflight.status, 204)
            XCTAssertEqual(preflight.headers[.accessControlAllowOrigin], "http://localhost:5173")
            XCTAssertTrue(preflight.headers[.accessControlAllowHeaders]?.lowercased().contains("authorization") ?? false)
            let refused = try await client.send(.get, "/emulator/v1/connections", headers: [.origin: "http://localhost:5173"])
            XCTAssertEqual(refused.status, 401)
            XCTAssertEqual(refused.headers[.accessControlAllowOrigin], "http://localhost:5173")  // the page can read why
        }
    }
}
