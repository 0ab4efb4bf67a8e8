import FiregateBackend
import FiregateEdge
@testable import FiregateHTTP
import FiregateModel
import FiregateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import XCTest

let base = "/v1/projects/p/databases/(default)/documents"
let root = "projects/p/databases/(default)/documents"
let testDB = DatabaseID(project: "p")

/// A response as the tests look at it.
struct Reply {
    let status: Int
    let headers: HTTPFields
    let text: String

    var json: JSON? { try? JSONParser.parse(text) }

    /// The body re-serialised compactly (stable member order as sent).
    var body: String { json.map { JSONWriter.string($0) } ?? text }

    /// `error.status` of an error body.
    var errorStatus: String? { json?["error"]?["status"]?.stringValue }
    var errorMessage: String? { json?["error"]?["message"]?.stringValue }
}

extension TestClientProtocol {
    func send(_ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil, headers: HTTPFields = [:]) async throws -> Reply {
        try await execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
            Reply(status: Int(response.status.code), headers: response.headers, text: String(buffer: response.body))
        }
    }
}

/// Runs `test` against the real responder over an in-memory backend.
func withServer(setup: TestingSetup = .router, listen: ListenOptions = ListenOptions(),
                configure: (inout ServerConfiguration) -> Void = { _ in },
                _ test: @escaping @Sendable (any TestClientProtocol, Backend) async throws -> Void) async throws {
    let backend = try await Backend.inMemory(extraMigrations: EdgeClients.migrations)
    var configuration = ServerConfiguration()
    configuration.dataDirectory = nil
    configuration.port = 0
    configuration.logLevel = .critical
    configuration.listen = listen
    configure(&configuration)
    let app = try FiregateServer.makeApplication(configuration: configuration, backend: backend)
    try await app.test(setup) { client in try await test(client, backend) }
}

/// A Value's JSON text, for building request bodies.
func valueJSON(_ value: Value) -> String { JSONWriter.string(value.json) }

func assertError(_ reply: Reply, _ httpStatus: Int, _ status: String, contains: String? = nil,
                 file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(reply.status, httpStatus, reply.text, file: file, line: line)
    XCTAssertEqual(reply.errorStatus, status, reply.text, file: file, line: line)
    XCTAssertEqual(reply.json?["error"]?["code"], .int(Int64(httpStatus)), file: file, line: line)
    if let contains {
        XCTAssertTrue(reply.errorMessage?.contains(contains) ?? false, "\(reply.text) lacks \"\(contains)\"", file: file, line: line)
    }
    XCTAssertEqual(reply.headers[.contentType], "application/json; charset=utf-8", file: file, line: line)
}

func percentEncode(_ text: String) -> String {
    text.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
}
