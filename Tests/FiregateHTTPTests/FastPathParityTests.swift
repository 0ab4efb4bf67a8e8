import FiregateModel
import HTTPTypes
import HummingbirdTesting
import Synchronization
import XCTest

@testable import FiregateHTTP

/// The fast path answers the common requests on the event loop, the full (Hummingbird) path
/// answers everything: the same requests must get the same answers from both. Each request
/// runs against a server with the fast path on and one with it off (`fastPath = false`); the
/// status, the content type and the body (times masked) must match.
final class FastPathParityTests: XCTestCase {
    /// (method, path, body), in order: writes first so the reads have something to find.
    static let requests: [(HTTPRequest.Method, String, String?)] = [
        (.patch, "\(base)/c/a", #"{"fields":{"n":{"integerValue":"1"},"s":{"stringValue":"x"}}}"#),
        (.get, "\(base)/c/a", nil),
        (.get, "\(base)/c/missing", nil),
        (.get, "\(base)/c/a?mask.fieldPaths=n", nil),
        (.post, "\(base):commit", #"{"writes":[{"update":{"name":"\#(root)/c/b","fields":{"n":{"integerValue":"2"}}}}]}"#),
        (.get, "\(base)/c/b", nil),
        (.post, "\(base):commit", #"{"writes":[{"update":{"name":"\#(root)/c/b","fields":{}},"currentDocument":{"exists":false}}]}"#),
        (.post, "\(base):commit", #"{"writes":[{"update":"#),
        (.post, "\(base):commit", #"{"writes":[{"delete":"\#(root)/c/a"}]}"#),
        (.get, "\(base)/c/a", nil),
        (.get, "/v1/projects/p/databases/(default)/documents/c", nil),
        (.get, "/v1/projects/p/databases/(default)/documents/c/a/b", nil),
        (.put, "/scores/alice.json?ns=p", #"{"points":3}"#),
        (.get, "/scores.json?ns=p", nil),
        (.get, "/scores/bob.json?ns=p", nil),
        (.get, "/scores.json?ns=p&orderBy=%22points%22", nil),
        (.get, "/healthz", nil),
    ]

    /// Each request's answer as the comparison sees it.
    static func answers(fastPath: Bool) async throws -> [String] {
        let answers = Mutex<[String]>([])
        try await withServer(setup: .live, configure: { $0.fastPath = fastPath }) { client, _ in
            for (method, path, body) in requests {
                let reply = try await client.send(method, path, body, headers: body == nil ? [:] : [.contentType: "application/json"])
                let masked = reply.body.replacingOccurrences(of: #"\d{4}-\d\d-\d\dT[0-9:.]+Z"#, with: "<time>", options: .regularExpression)
                let line = "\(method) \(path) → \(reply.status) \(reply.headers[.contentType] ?? "-") \(masked)"
                answers.withLock { $0.append(line) }
            }
        }
        return answers.withLock { $0 }
    }

    func testTheFastPathAnswersAsTheFullPathDoes() async throws {
        let fast = try await FastPathParityTests.answers(fastPath: true)
        let full = try await FastPathParityTests.answers(fastPath: false)
        XCTAssertEqual(fast.count, FastPathParityTests.requests.count)
        for (onFast, onFull) in zip(fast, full) {
            XCTAssertEqual(onFast, onFull)
        }
        // The script reaches the answers worth comparing: found, missing, refused and malformed.
        XCTAssertTrue(fast.contains { $0.contains("c/missing → 404") })
        XCTAssertTrue(fast.contains { $0.contains(":commit → 400") })
        XCTAssertTrue(fast.contains { $0.contains(":commit → 409") })
    }
}
