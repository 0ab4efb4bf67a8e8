import FiregateBackend
import FiregateModel
import FiregateRealtime
import FiregateStore
import Foundation
import Synchronization
import XCTest

/// A transport that keeps what the session sent, and can wait for it.
final class RecordingTransport: RealtimeTransport {
    private let state = Mutex<(sent: [String], closed: String?)>(([], nil))

    func send(_ text: [UInt8]) { state.withLock { $0.sent.append(String(decoding: text, as: UTF8.self)) } }
    func close(reason: String) { state.withLock { $0.closed = reason } }

    var sent: [String] { state.withLock { $0.sent } }
    var closedReason: String? { state.withLock { $0.closed } }

    /// Waits until some sent message satisfies `predicate`; returns everything sent by then.
    func waitFor(_ predicate: (String) -> Bool, timeout: Duration = .seconds(5)) async throws -> [String] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let sent = self.sent
            if sent.contains(where: predicate) { return sent }
            try await Task.sleep(for: .milliseconds(5))
        }
        XCTFail("nothing matching was sent; sent: \(sent)")
        return sent
    }
}

/// A transport whose sends wait until `release()`: the session cannot finish answering, so
/// what arrives meanwhile waits in its queue.
final class StalledTransport: RealtimeTransport {
    private let gate = DispatchSemaphore(value: 0)
    private let closed = Mutex<String?>(nil)

    func send(_ text: [UInt8]) {
        gate.wait()
        gate.signal()
    }

    func close(reason: String) { closed.withLock { $0 = reason } }
    var closedReason: String? { closed.withLock { $0 } }
    func release() { gate.signal() }
}

/// One socket's session over an in-memory tree: order of pushes and replies, writes, hashes,
/// onDisconnect exactly once.
final class RealtimeSessionTests: XCTestCase {
    private var tree: TreeBackend!

    override func setUp() async throws {
        let store = try SQLiteStore(directory: nil, migrations: TreeBackend.migrations)
        tree = TreeBackend(storage: SQLiteTreeStorage(store: store), clock: ServerClock())
    }

    private func session(_ transport: RecordingTransport, identity: CallIdentity = .unauthenticated) -> RealtimeSession {
        RealtimeSession(tree: tree, namespace: "ns", identity: identity, transport: transport)
    }

    private func request(_ session: RealtimeSession, _ number: Int, _ action: String, _ body: String) {
        session.receive(Array(#"{"t":"d","d":{"r":\#(number),"a":"\#(action)","b":\#(body)}}"#.utf8))
    }

    private func reply(_ number: Int) -> (String) -> Bool { { $0.hasPrefix(#"{"t":"d","d":{"r":\#(number),"#) } }

    func testTheHelloAndPongAreControlMessages() {
        let transport = RecordingTransport()
        let s = session(transport)
        s.start(serverMillis: 1234, host: "h:1", sessionID: "s1")
        s.receive(Array(#"{"t":"c","d":{"t":"p","d":{}}}"#.utf8))
        XCTAssertEqual(transport.sent, [#"{"t":"c","d":{"t":"h","d":{"ts":1234,"v":"5","h":"h:1","s":"s1"}}}"#,
                                        #"{"t":"c","d":{"t":"o","d":null}}"#])
    }

    func testAListensDataAndAWritesEffectComeBeforeTheirReplies() async throws {
        let transport = RecordingTransport()
        let s = session(transport)
        request(s, 1, "q", #"{"p":"/a","h":""}"#)
        request(s, 2, "p", #"{"p":"/a/b","d":5}"#)
        let sent = try await transport.waitFor(reply(2))
        XCTAssertEqual(sent, [#"{"t":"d","d":{"a":"d","b":{"p":"a","d":null}}}"#,
                              #"{"t":"d","d":{"r":1,"b":{"s":"ok","d":{}}}}"#,
                              #"{"t":"d","d":{"a":"d","b":{"p":"a/b","d":5}}}"#,
                              #"{"t":"d","d":{"r":2,"b":{"s":"ok","d":""}}}"#])
        XCTAssertEqual(s.listenCount, 1)
    }

    func testAPutWithAStaleHashIsDatastaleAndWritesNothing() async throws {
        let transport = RecordingTransport()
        let s = session(transport)
        let current = TreeSDKHash.of(try TreeNodeDecoder.decode(1, at: .root, serverValues: nil))
        request(s, 1, "p", #"{"p":"/n","d":1}"#)
        request(s, 2, "p", #"{"p":"/n","d":2,"h":"\#(current)"}"#)
        request(s, 3, "p", #"{"p":"/n","d":3,"h":"\#(current)"}"#)
        let sent = try await transport.waitFor(reply(3))
        XCTAssertTrue(sent.contains(#"{"t":"d","d":{"r":2,"b":{"s":"ok","d":""}}}"#))
        XCTAssertTrue(sent.contains(#"{"t":"d","d":{"r":3,"b":{"s":"datastale","d":"Transaction hash does not match"}}}"#))
        let stored = try await tree.read(namespace: "ns", path: try TreePath(validating: "/n"))
        XCTAssertEqual(stored.leaf, .int(2))
    }

    func testOnDisconnectRunsOnceAfterWhatWasReceivedAndACancelledOneNever() async throws {
        let transport = RecordingTransport()
        let s = session(transport)
        request(s, 1, "o", #"{"p":"/status","d":"offline"}"#)
        request(s, 2, "om", #"{"p":"/room","d":{"me":null,"count":{".sv":{"increment":-1}}}}"#)
        request(s, 3, "o", #"{"p":"/gone/x","d":1}"#)
        request(s, 4, "oc", #"{"p":"/gone","d":null}"#)
        request(s, 5, "m", #"{"p":"/","d":{"status":"online","room/me":true,"room/count":3}}"#)
        s.connectionClosed()
        s.connectionClosed()
        let deadline = ContinuousClock.now + .seconds(5)
        var root = TreeNode.empty
        while ContinuousClock.now < deadline {
            root = try await tree.read(namespace: "ns", path: .root)
            if root.node(at: try TreePath(validating: "status")).leaf == .string("offline") { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        try await Task.sleep(for: .milliseconds(100))
        root = try await tree.read(namespace: "ns", path: .root)
        XCTAssertEqual(TreeNodeWriter.string(root), #"{"room":{"count":2},"status":"offline"}"#)
        // After closing, nothing more is taken.
        request(s, 6, "p", #"{"p":"/late","d":1}"#)
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertFalse(transport.sent.contains(where: reply(6)))
    }

    func testAListenTheServerEndsIsRevokedWithItsPathAndQuery() async throws {
        let transport = RecordingTransport()
        let s = session(transport)
        request(s, 1, "q", #"{"p":"/a","q":{"i":".key","l":1},"t":3,"h":""}"#)
        request(s, 2, "q", #"{"p":"/b","h":""}"#)
        _ = try await transport.waitFor(reply(2))
        XCTAssertEqual(s.listenCount, 2)
        // What security rules will do when a listen loses access: the namespace ends its streams.
        await tree.cancelStreams(namespace: "ns", reason: "Permission denied")
        let sent = try await transport.waitFor { $0.contains(#""p":"b""#) && $0.contains(#""a":"c""#) }
        XCTAssertTrue(sent.contains(#"{"t":"d","d":{"a":"c","b":{"p":"a","q":{"i":".key","l":1}}}}"#))
        XCTAssertTrue(sent.contains(#"{"t":"d","d":{"a":"c","b":{"p":"b"}}}"#))
        XCTAssertEqual(s.listenCount, 0)
        s.securityDebug("rule at /a: false")
        XCTAssertEqual(transport.sent.last, #"{"t":"d","d":{"a":"sd","b":{"msg":"rule at /a: false"}}}"#)
    }

    func testAuthChangesTheIdentityAndARevocationIsPushed() async throws {
        let transport = RecordingTransport()
        let s = session(transport)
        let claims = #"{"sub":"alice"}"#.data(using: .utf8)!.base64EncodedString().replacingOccurrences(of: "=", with: "")
        request(s, 1, "auth", #"{"cred":"e30.\#(claims).sig"}"#)
        _ = try await transport.waitFor(reply(1))
        XCTAssertEqual(s.identity.uid, "alice")
        request(s, 2, "gauth", #"{"cred":"owner"}"#)
        _ = try await transport.waitFor(reply(2))
        XCTAssertEqual(s.identity, .admin)
        request(s, 3, "auth", #"{"cred":"nope"}"#)
        let sent = try await transport.waitFor(reply(3))
        XCTAssertTrue(sent.last!.contains(#""s":"invalid_token""#))
        s.revokeAuth(status: "expired_token", reason: "old")
        XCTAssertEqual(transport.sent.last, #"{"t":"d","d":{"a":"ac","b":{"s":"expired_token","d":"old"}}}"#)
        XCTAssertEqual(s.identity, .unauthenticated)
    }

    func testInputThatBreaksTheFramingClosesAndTooManyWaitingRequestsToo() async throws {
        let transport = RecordingTransport()
        let s = session(transport)
        s.receive(Array("{oops".utf8))
        XCTAssertEqual(transport.closedReason, "A message must be a JSON object (protocol v5).")
        var limits = RealtimeLimits()
        limits.maxQueuedRequests = 3
        // The socket cannot take the replies (its sends wait), so the requests pile up.
        let flooded = StalledTransport()
        defer { flooded.release() }
        let slow = RealtimeSession(tree: tree, namespace: "ns", identity: .unauthenticated, transport: flooded, limits: limits)
        for i in 1...50 { request(slow, i, "g", #"{"p":"/"}"#) }
        XCTAssertEqual(flooded.closedReason, "More than 3 requests are waiting for their replies.")
    }
}
