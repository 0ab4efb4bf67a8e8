import FiregateModel
import NIOCore
import XCTest

@testable import FiregateHTTP

/// The fast path's two pure parts, with strings and events only: which requests it answers
/// (`FastRouter`) and how a connection goes on (`FastPathStateMachine`).
final class FastRouteTests: XCTestCase {
    let root = "/v1/projects/p/databases/(default)/documents"

    func route(_ target: String, method: SimpleRequest.Method = .get, query: String? = nil, stream: Bool = false,
               loaded: Bool = true, rules: Bool = false) -> FastRoute {
        var router = FastRouter(defaultNamespace: "p")
        return router.route(method, target: target, query: query, acceptsEventStream: stream, documentsLoaded: loaded, rulesActive: rules)
    }

    func testDocumentRequests() throws {
        let doc = try DocumentRequestPath.parse("\(root)/c/d")
        XCTAssertEqual(route("\(root)/c/d"), .documentGet(doc))
        XCTAssertEqual(route("\(root)/c/d", rules: true), .documentGet(doc), "judged on the fast path")
        XCTAssertEqual(route("\(root)/c/d", query: "mask.fieldPaths=a"), .fullPath)
        XCTAssertEqual(route("\(root)/c/d", stream: true), .fullPath)
        XCTAssertEqual(route("\(root)/c"), .fullPath, "a collection is listed by the full path")
        XCTAssertEqual(route("\(root)/c/d", loaded: false), .fullPath, "the full path waits for the load")
        XCTAssertEqual(route("\(root)/c/d:listen"), .documentStream(try DocumentRequestPath.parse("\(root)/c/d:listen")))
        XCTAssertEqual(route("\(root)/c/d:listen", rules: true), .fullPath, "streams under rules are judged by the full path")
        XCTAssertEqual(route("\(root):commit", method: .post), .commit(try DocumentRequestPath.parse("\(root):commit")))
        XCTAssertEqual(route("\(root):commit", method: .post, query: "x=1"), .fullPath)
        XCTAssertEqual(route("\(root):runQuery", method: .post), .fullPath)
        XCTAssertEqual(route("\(root)/c/d:commit", method: .post), .fullPath)
        XCTAssertEqual(route("/v1/projects/p/databases/(default)/nowhere/c/d"), .fullPath)
    }

    func testTreeRequests() throws {
        let scores = try TreeRequest.location("/scores/alice.json")
        XCTAssertEqual(route("/scores/alice.json"), .treeRead(namespace: "p", path: scores))
        XCTAssertEqual(route("/scores/alice.json", query: "ns=other"), .treeRead(namespace: "other", path: scores))
        XCTAssertEqual(route("/scores/alice.json", stream: true), .treeStream(namespace: "p", path: scores))
        XCTAssertEqual(route("/scores.json", query: "ns=p&orderBy=%22points%22"), .fullPath)
        XCTAssertEqual(route("/scores.json", query: "orderBy=%22points%22"), .fullPath)
        XCTAssertEqual(route("/scores/alice.json", rules: true), .fullPath, "tree reads under rules are judged by the full path")
        XCTAssertEqual(route("/healthz"), .fullPath)
    }

    func testAWebChannelStreamingBackChannelIsTheOnlyChannelRequestTakenAndTheOnlyPageRequest() {
        let listen = "/google.firestore.v1.Firestore/Listen/channel", write = "/google.firestore.v1.Firestore/Write/channel"
        let streaming = "VER=8&database=projects%2Fp%2Fdatabases%2F(default)&RID=rpc&SID=abc&AID=7&CI=0&TYPE=xmlhttp&t=1"
        XCTAssertEqual(route(listen, query: streaming), .webChannelBackChannel(session: "abc", acknowledged: 7))
        XCTAssertEqual(route(write, query: streaming), .webChannelBackChannel(session: "abc", acknowledged: 7))
        XCTAssertEqual(route(listen, query: streaming, rules: true), .webChannelBackChannel(session: "abc", acknowledged: 7),
                       "rules judge the session's targets, not its back channel")
        XCTAssertEqual(route(listen, query: streaming.replacingOccurrences(of: "CI=0", with: "CI=1")), .fullPath, "a long poll")
        XCTAssertEqual(route(listen, method: .post, query: "VER=8&SID=abc&RID=3&AID=0"), .fullPath, "the forward channel")
        XCTAssertEqual(route(listen, query: streaming.replacingOccurrences(of: "VER=8", with: "VER=7")), .fullPath, "its error is the full path's")
        XCTAssertEqual(route(listen, query: "VER=8&RID=rpc&CI=0&TYPE=xmlhttp"), .fullPath, "no session")
        XCTAssertEqual(route("/google.firestore.v1.Firestore/Commit/channel", query: streaming), .fullPath)
        XCTAssertTrue(FastRoute.webChannelBackChannel(session: "abc", acknowledged: 7).answersPages)
        XCTAssertFalse(route("\(root)/c/d").answersPages, "a page's document GET gets its CORS headers on the full path")
    }

    func testAnOriginIsNotedForTheRouteToDecide() {
        let head = "GET /a.json HTTP/1.1\r\nHost: x\r\nOrigin: http://localhost:3000\r\n\r\n"
        guard case .simple(let request) = SimpleRequest.parse(ByteBuffer(string: head)) else { return XCTFail("not simple") }
        XCTAssertEqual(request.origin, "http://localhost:3000")
        let twice = "GET /a.json HTTP/1.1\r\nOrigin: http://a\r\nOrigin: http://b\r\n\r\n"
        guard case .notSimple = SimpleRequest.parse(ByteBuffer(string: twice)) else { return XCTFail("two origins are the full path's") }
    }

    func testARepeatedTargetRoutesAsTheFirstTime() {
        var router = FastRouter(defaultNamespace: "p")
        let first = router.route(.get, target: "/a.json", query: "ns=x", acceptsEventStream: false, documentsLoaded: true, rulesActive: false)
        let other = router.route(.get, target: "/a.json", query: nil, acceptsEventStream: false, documentsLoaded: true, rulesActive: false)
        XCTAssertNotEqual(first, other, "the remembered parse is per query too")
        XCTAssertEqual(router.route(.get, target: "/a.json", query: "ns=x", acceptsEventStream: false, documentsLoaded: true, rulesActive: false), first)
    }

    func testAnAnswerUnderWayHoldsInputAndEventsUntilItIsOut() {
        var machine = FastPathStateMachine()
        guard case .process = machine.channelRead() else { return XCTFail("a serving connection processes its input") }
        machine.answerStarted()
        guard case .buffer = machine.channelRead() else { return XCTFail("input waits behind an answer") }
        XCTAssertTrue(machine.shouldRead(inputWaiting: false))
        XCTAssertFalse(machine.shouldRead(inputWaiting: true), "no more reading once input waits")
        guard case .wait = machine.inputClosed() else { return XCTFail("a half-close waits for the answer") }
        guard case .none = machine.quiesce() else { return XCTFail("a shutdown waits for the answer") }
        XCTAssertNil(machine.afterAnswer().inputClosed, "nothing happens while the answer is still under way")
        machine.answerReady()
        let after = machine.afterAnswer()
        guard case .handOver? = after.inputClosed else { return XCTFail("the half-close goes to the full path") }
        XCTAssertTrue(after.resumeReading)
        guard case .close = machine.closeIfQuiesced() else { return XCTFail("the shutdown closes the connection now") }
        guard case .none = machine.closeIfQuiesced() else { return XCTFail("once") }
    }

    func testAStreamEndsOnAHalfCloseAndAShutdown() {
        var machine = FastPathStateMachine()
        machine.streamStarted()
        guard case .bufferWhileStreaming = machine.channelRead() else { return XCTFail("input is not read behind a stream") }
        guard case .endStream = machine.inputClosed() else { return XCTFail("a half-close ends the stream") }
        guard case .shutDownStream = machine.quiesce() else { return XCTFail("a shutdown ends the stream, saying so") }
        machine.streamEnded()
        XCTAssertEqual(machine.state, .serving)
        machine.handedOver()
        guard case .forward = machine.channelRead(), case .forward = machine.inputClosed(), case .forward = machine.quiesce() else {
            return XCTFail("after the hand-over everything is the full path's")
        }
    }
}
