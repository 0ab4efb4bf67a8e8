import FiregateBackend
import FiregateModel
import HTTPTypes
import Hummingbird
import NIOCore

/// Builds tree responses: JSON bodies honoring `print`, JSONP and download names, ETag
/// headers, and the CORS header every tree answer carries.
enum TreeResponses {
    static let etag = HTTPField.Name("ETag")!
    static let allowOrigin = HTTPField.Name("Access-Control-Allow-Origin")!

    static var baseHeaders: HTTPFields {
        [.contentType: "application/json; charset=utf-8", allowOrigin: "*", .cacheControl: "no-cache"]
    }

    /// A JSON answer; `print=silent` turns it into 204 with no body.
    static func json(_ bytes: [UInt8], for call: TreeRequest, status: HTTPResponse.Status = .ok, etag: String? = nil) -> Response {
        var headers = baseHeaders
        if let etag { headers[TreeResponses.etag] = etag }
        if call.print == .silent && status == .ok {
            return Response(status: .noContent, headers: headers)
        }
        var body = bytes
        if let callback = call.callback, call.method == .get {
            body = Array("\(callback)(".utf8) + bytes + Array(");".utf8)
            headers[.contentType] = "application/javascript; charset=utf-8"
        }
        if let download = call.download, call.method == .get {
            let safe = download.filter { $0 != "\"" && $0 != "\r" && $0 != "\n" }
            headers[.contentDisposition] = "attachment; filename=\"\(safe)\""
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    static func style(_ call: TreeRequest) -> JSONWriter.Style { call.print == .pretty ? .pretty : .compact }

    /// 304 for `if-none-match` on an unchanged location.
    static func notModified(etag: String) -> Response {
        var headers = baseHeaders
        headers[TreeResponses.etag] = etag
        return Response(status: .notModified, headers: headers)
    }

    /// 412 for a failed `if-match`: the current value and its ETag.
    static func conflict(_ current: TreeNode, etag: String, for call: TreeRequest) -> Response {
        var headers = baseHeaders
        headers[TreeResponses.etag] = etag
        let body = TreeNodeWriter.bytes(current, format: call.format, style: style(call))
        return Response(status: .preconditionFailed, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `{"error":"…"}` (see `ErrorResponse.tree`) with the CORS header.
    static func error(_ error: FiregateError) -> Response {
        var response = ErrorResponse.tree(error)
        response.headers[allowOrigin] = "*"
        return response
    }

    /// The CORS preflight answer.
    static func preflight() -> Response {
        Response(status: .ok, headers: [
            allowOrigin: "*",
            HTTPField.Name("Access-Control-Allow-Methods")!: "GET, PUT, POST, PATCH, DELETE, OPTIONS",
            HTTPField.Name("Access-Control-Allow-Headers")!: "Content-Type, Authorization, X-Firebase-ETag, If-Match, If-None-Match, X-HTTP-Method-Override, X-Firebase-Decoding, Cache-Control, Last-Event-ID",
            HTTPField.Name("Access-Control-Expose-Headers")!: "ETag",
            HTTPField.Name("Access-Control-Max-Age")!: "3600",
        ])
    }
}
