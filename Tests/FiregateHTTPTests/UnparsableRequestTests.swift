import FiregateModel
import XCTest

@testable import FiregateHTTP

/// Requests the HTTP/1.1 parser refuses get a JSON error, then the server closes its side.
final class UnparsableRequestTests: XCTestCase {
    func testAnOverlongHeaderGetsAFirestoreErrorBody() async throws {
        try await withServer(setup: .live) { client, _ in
            let port = try XCTUnwrap(client.port)
            for headers in [["X-Big: " + String(repeating: "v", count: 100_000)], []] {
                let path = headers.isEmpty ? "/healthz?x=" + String(repeating: "a", count: 100_000) : "/healthz"
                let stream = try RawHTTPStream(port: port, path: path, headers: headers)
                let ended = await stream.read { $0.body.ended }
                XCTAssertTrue(ended, "the server keeps the connection open after refusing the request")
                XCTAssertTrue(stream.head?.hasPrefix("HTTP/1.1 400") ?? false, stream.head ?? "no answer")
                let error = try JSONParser.parse(Array(stream.body.text.utf8))["error"]
                XCTAssertEqual(error?["code"], .int(400))
                XCTAssertEqual(error?["status"], .string("INVALID_ARGUMENT"))
                XCTAssertTrue(error?["message"]?.stringValue?.contains("80 KB") ?? false, stream.body.text)
            }
        }
    }
}
