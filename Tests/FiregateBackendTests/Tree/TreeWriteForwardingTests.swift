@testable import FiregateBackend
import FiregateModel
import FiregateStore
import Synchronization
import XCTest

/// A tree write on a replica that does not own its namespace (docs/replicas.md): sent to the owner
/// as `TreeWriteWire` JSON, read back the same there, and refused when it may not be sent.
final class TreeWriteForwardingTests: XCTestCase {
    func testARequestReadsBackAsItWasWithItsServerValuesUnresolved() throws {
        let node = tree(["a": 1, "b": ["c": true, ".priority": 2]], at: path("x"))
        var reaped = TreeWriteRequest(path: path("presence/me"), operation: .set(try TreeWriteValue.prepare("offline", at: path("presence/me"))))
        reaped.progress = DisconnectProgress(replica: "b", connection: "a/c1/f00", done: 1, total: 2)
        let requests: [TreeWriteRequest] = [
            reaped,
            TreeWriteRequest(path: path("x"), operation: .set(.node(node)), ifSDKHash: "h=", wantsETag: true),
            TreeWriteRequest(path: path("x/y"), operation: .push(try TreeWriteValue.prepare(["at": [".sv": "timestamp"]], at: path("x/y")))),
            TreeWriteRequest(path: path("x"), operation: .update(try TreeUpdateEntry.prepare(["p/q": 5, "r": ["s": "t"]], under: path("x"))),
                             ifMatch: "etag"),
        ]
        let caller = RulesCaller(identity: .unauthenticated, surface: "edge", client: "c1")
        for request in requests {
            let wire = TreeWriteWire.request(namespace: "ns", request, caller: caller)
            let back = try TreeWriteWire.request(try JSONParser.parse(JSONWriter.bytes(wire)))
            XCTAssertEqual(back.namespace, "ns")
            XCTAssertEqual(back.surface, "edge")
            XCTAssertEqual(back.client, "c1")
            XCTAssertEqual(TreeWriteWire.request(namespace: "ns", back.request, caller: caller), wire)
        }
        XCTAssertEqual(try TreeWriteWire.request(TreeWriteWire.request(namespace: "ns", reaped, caller: caller)).request.progress, reaped.progress)
        let push = try TreeWriteWire.request(TreeWriteWire.request(namespace: "ns", requests[2], caller: caller)).request
        guard case .push(.needsServerValues(let json)) = push.operation else { return XCTFail("\(push.operation)") }
        XCTAssertEqual(json, ["at": [".sv": "timestamp"]])
        let set = try TreeWriteWire.request(TreeWriteWire.request(namespace: "ns", requests[1], caller: caller)).request
        guard case .set(.node(let sent)) = set.operation else { return XCTFail("\(set.operation)") }
        XCTAssertEqual(sent, node, "priorities travel")
        XCTAssertEqual(set.ifSDKHash, "h=")
        XCTAssertTrue(set.wantsETag)
    }

    func testAnOutcomeReadsBackAsItWas() throws {
        let written = TreeWriteOutcome.written(TreeWriteResult(
            path: path("x/-Nabc"), value: tree(["at": 1_700_000_000_000], at: path("x/-Nabc")),
            entries: [TreePatchEntry(path: path("p/q"), node: tree(5, at: path("x/p/q")))], pushKey: "-Nabc", etag: "e1"))
        let conflict = TreeWriteOutcome.conflict(current: tree(["n": 2], at: .root), etag: "hash=")
        for outcome in [written, conflict] {
            let wire = TreeWriteWire.outcome(outcome)
            XCTAssertEqual(TreeWriteWire.outcome(try TreeWriteWire.outcome(try JSONParser.parse(JSONWriter.bytes(wire)))), wire)
        }
        XCTAssertThrowsError(try TreeWriteWire.outcome(["nothing": true]))
        XCTAssertThrowsError(try TreeWriteWire.request(["namespace": "ns", "path": ["a", ""], "operation": "set", "value": 1]))
        XCTAssertThrowsError(try TreeWriteWire.request(["namespace": "ns", "path": [], "operation": "delete"]))
    }

    func testAWriteToANamespaceOwnedElsewhereGoesToTheOwnerOnlyWhenItMayBeSent() async throws {
        let storage = RefusingTreeStorage()
        let backend = TreeBackend(storage: storage, clock: ServerClock())
        let sender = RecordingSender()
        backend.remoteWrites.install(sender)
        let request = TreeWriteRequest(path: path("a"), operation: .set(.node(tree(1, at: path("a")))))
        // A REST write reaches the backend at the owner: refused, not sent on.
        do {
            _ = try await backend.write(namespace: "ns", request)
            XCTFail("a write without a caller to send it as was taken")
        } catch let error as FiregateError {
            XCTAssertEqual(error.status, .unavailable)
        }
        XCTAssertEqual(sender.sent.withLock { $0.count }, 0)
        let caller = RulesCaller(identity: .user(uid: "ada", claims: ["sub": "ada"]), surface: "websocket")
        guard case .written(let result) = try await backend.write(namespace: "ns", request, forwardingAs: caller) else { return XCTFail() }
        XCTAssertEqual(result.path, path("a"))
        XCTAssertEqual(sender.sent.withLock { $0.map(\.uid) }, ["ada"])
        XCTAssertEqual(try storage.loadRows(namespace: "ns"), [], "nothing was written here")
    }
}

/// A store where another live replica owns every namespace.
private final class RefusingTreeStorage: TreeStorage {
    func loadRows(namespace: String) throws -> [TreeStorageRow] { [] }
    func namespaces() throws -> [String] { [] }
    func commit(_ batches: [TreeStorageBatch]) async throws { XCTFail("committed on a replica that does not own the namespace") }
    func writeRefusal(namespace: String) -> FiregateError? { .unavailable("Namespace \(namespace) is owned by replica a.") }
}

/// The owner, as far as the tree can tell: answers every write as written at its path.
private final class RecordingSender: RemoteTreeWriteSender {
    let sent = Mutex<[(namespace: String, uid: String?)]>([])

    func write(namespace: String, _ request: TreeWriteRequest, as caller: RulesCaller) async throws(FiregateError) -> TreeWriteOutcome? {
        if case .user(let uid, _) = caller.identity { sent.withLock { $0.append((namespace, uid)) } } else { sent.withLock { $0.append((namespace, nil)) } }
        return .written(TreeWriteResult(path: request.path, value: .empty, entries: [], pushKey: nil, etag: nil))
    }
}
