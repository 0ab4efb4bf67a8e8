import FiregateBackend
import FiregateHTTP
import FiregateModel
import FiregateTestSupport
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import XCTest

private func body(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

/// The tree surface through the real responder (HummingbirdTesting), including a stream.
final class TreeRoutesTests: XCTestCase {
    func makeApp() async throws -> (some ApplicationProtocol, Backend) {
        let backend = try await Backend.inMemory(project: "demo-project")
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.logLevel = .error
        return (try FiregateServer.makeApplication(configuration: configuration, backend: backend), backend)
    }


    func testCrudRoundTrip() async throws {
        let (app, _) = try await makeApp()
        try await app.test(.router) { client in
            try await client.execute(uri: "/users/alan.json?ns=t", method: .put, body: body(#"{"name":"Alan","born":1912}"#)) { response in
                XCTAssertEqual(response.status, .ok)
                XCTAssertEqual(String(buffer: response.body), #"{"born":1912,"name":"Alan"}"#)
                XCTAssertEqual(response.headers[.contentType], "application/json; charset=utf-8")
            }
            try await client.execute(uri: "/users.json?ns=t", method: .patch, body: body(#"{"alan/born":1913,"grace/name":"Grace"}"#)) { response in
                XCTAssertEqual(String(buffer: response.body), #"{"alan/born":1913,"grace/name":"Grace"}"#)
            }
            let name = try await client.execute(uri: "/users.json?ns=t", method: .post, body: body(#""pushed""#)) { response in
                try JSONParser.parse(response.body.readableBytesView)["name"]?.stringValue
            }
            XCTAssertEqual(name?.count, 20)
            try await client.execute(uri: "/users.json?ns=t&shallow=true", method: .get) { response in
                XCTAssertEqual(String(buffer: response.body), #"{"\#(name!)":true,"alan":true,"grace":true}"#)
            }
            try await client.execute(uri: "/users/alan.json?ns=t", method: .delete) { response in
                XCTAssertEqual(String(buffer: response.body), "null")
            }
            try await client.execute(uri: "/users/alan.json?ns=t", method: .get) { response in
                XCTAssertEqual(String(buffer: response.body), "null")
            }
            try await client.execute(uri: "/users.json?ns=other", method: .get) { response in
                XCTAssertEqual(String(buffer: response.body), "null")
            }
        }
    }

    func testDefaultNamespaceAndOverride() async throws {
        let (app, backend) = try await makeApp()
        try await app.test(.router) { client in
            try await client.execute(uri: "/x.json", method: .post, headers: [HTTPField.Name("X-HTTP-Method-Override")!: "PUT"], body: body("1"))
            try await client.execute(uri: "/x.json?x-http-method-override=PATCH", method: .post, body: body(#"{"y":2}"#))
        }
        let value = try await backend.tree.read(namespace: "demo-project", path: try TreePath(validating: "x"))
        XCTAssertEqual(TreeNodeWriter.string(value), #"{"y":2}"#)
    }

    func testETagConflictAndNotModified() async throws {
        let (app, _) = try await makeApp()
        try await app.test(.router) { client in
            let etag = try await client.execute(uri: "/e.json?ns=t", method: .put, headers: [.ifMatch: "null_etag"], body: body("1")) { response in
                XCTAssertEqual(response.status, .ok)
                return response.headers[HTTPField.Name("ETag")!]
            }
            XCTAssertNotNil(etag)
            try await client.execute(uri: "/e.json?ns=t", method: .put, headers: [.ifMatch: "null_etag"], body: body("2")) { response in
                XCTAssertEqual(response.status, .preconditionFailed)
                XCTAssertEqual(String(buffer: response.body), "1")
                XCTAssertEqual(response.headers[HTTPField.Name("ETag")!], etag)
            }
            try await client.execute(uri: "/e.json?ns=t", method: .get, headers: [.ifNoneMatch: etag!]) { response in
                XCTAssertEqual(response.status, .notModified)
            }
            try await client.execute(uri: "/e.json?ns=t", method: .get, headers: [HTTPField.Name("X-Firebase-ETag")!: "true"]) { response in
                XCTAssertEqual(response.headers[HTTPField.Name("ETag")!], etag)
            }
            try await client.execute(uri: "/e.json?ns=t", method: .delete, headers: [.ifMatch: etag!]) { response in
                XCTAssertEqual(response.status, .ok)
            }
            try await client.execute(uri: "/e.json?ns=t", method: .patch, headers: [.ifMatch: "x"], body: body("{}")) { response in
                XCTAssertEqual(response.status, .badRequest)
            }
        }
    }

    func testErrorsAreTreeShaped400s() async throws {
        let (app, _) = try await makeApp()
        let cases: [(String, HTTPRequest.Method, String?, String?)] = [
            ("/a.b.json?ns=t", .get, nil, "Invalid path: Invalid token in path"),
            ("/a.json?ns=t", .put, "{", "Invalid data; couldn't parse JSON object, array, or value."),
            ("/a.json?ns=t", .put, #"{"a$":1}"#, nil),
            ("/a.json?ns=t", .put, #"{".sv":"later"}"#, nil),
            ("/a.json?ns=t&limitToFirst=1", .get, nil, "orderBy must be defined when other query parameters are defined"),
            ("/a.json?ns=t&orderBy=x", .get, nil, "orderBy must be a valid JSON encoded path"),
            ("/a.json?ns=t&print=loud", .get, nil, nil),
            ("/a.json?ns=t&timeout=20min", .get, nil, nil),
            ("/a.json?ns=bad%20ns", .get, nil, nil),
            ("/a.json?ns=t", .patch, "[1]", nil),
        ]
        try await app.test(.router) { client in
            for (uri, method, payload, message) in cases {
                try await client.execute(uri: uri, method: method, body: payload.map { ByteBuffer(string: $0) }) { response in
                    XCTAssertEqual(response.status, .badRequest, uri)
                    let error = try JSONParser.parse(response.body.readableBytesView)["error"]?.stringValue
                    XCTAssertNotNil(error, uri)
                    if let message { XCTAssertEqual(error, message, uri) }
                }
            }
            try await client.execute(uri: "/a.json?ns=t", method: .get) { response in
                XCTAssertEqual(String(buffer: response.body), "null")
            }
        }
    }

    func testPrintAndQueries() async throws {
        let (app, _) = try await makeApp()
        try await app.test(.router) { client in
            try await client.execute(uri: "/s.json?ns=t&print=silent", method: .put, body: body(#"{"a":{"h":3},"b":{"h":1},"c":{"h":2}}"#)) { response in
                XCTAssertEqual(response.status, .noContent)
                XCTAssertEqual(response.body.readableBytes, 0)
            }
            try await client.execute(uri: #"/s.json?ns=t&orderBy=%22h%22&limitToFirst=2"#, method: .get) { response in
                XCTAssertEqual(String(buffer: response.body), #"{"b":{"h":1},"c":{"h":2}}"#)
            }
            try await client.execute(uri: #"/s.json?ns=t&orderBy=%22%24key%22&startAt=%22b%22&print=pretty"#, method: .get) { response in
                XCTAssertEqual(String(buffer: response.body), "{\n  \"b\" : {\n    \"h\" : 1\n  },\n  \"c\" : {\n    \"h\" : 2\n  }\n}")
            }
        }
    }

    func testStreamThroughTheResponder() async throws {
        let (app, backend) = try await makeApp()
        try await app.test(.live) { client in
            async let streamed = client.execute(uri: "/room.json?ns=live", method: .get, headers: [.accept: "text/event-stream"]) { response in
                (response.status, response.headers[.contentType], String(buffer: response.body))
            }
            // Wait until the stream is registered, then change the data and end the stream.
            for _ in 0..<200 where await backend.tree.streamCounts().streams == 0 { try await Task.sleep(for: .milliseconds(10)) }
            // The test client holds one connection, busy with the stream: write through the backend.
            let tree = backend.tree
            let a = try TreePath(validating: "room/a")
            _ = try await tree.write(namespace: "live", TreeWriteRequest(path: a, operation: .set(.node(TreeNode(leaf: .int(1))))))
            _ = try await tree.write(namespace: "live", TreeWriteRequest(path: .root, operation: .update([
                TreeUpdateEntry(path: try TreePath(validating: "room/b"), value: .node(TreeNode(leaf: .int(2)))),
                TreeUpdateEntry(path: try TreePath(validating: "x"), value: .node(TreeNode(leaf: .int(3)))),
            ])))
            _ = try await tree.write(namespace: "live", TreeWriteRequest(path: .root, operation: .set(.node(.empty))))
            await backend.tree.cancelStreams(namespace: "live", reason: "Permission denied")
            let (status, contentType, text) = try await streamed
            XCTAssertEqual(status, .ok)
            XCTAssertEqual(contentType, "text/event-stream; charset=utf-8")
            XCTAssertEqual(text, """
                event: put
                data: {"path":"/","data":null}

                event: put
                data: {"path":"/a","data":1}

                event: patch
                data: {"path":"/","data":{"b":2}}

                event: put
                data: {"path":"/","data":null}

                event: cancel
                data: "Permission denied"


                """)
        }
    }
}
