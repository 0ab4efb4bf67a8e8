import FiregateModel
import Hummingbird
import NIOCore

/// Builds JSON responses from `JSON` values or pre-encoded bytes.
enum JSONResponse {
    static func make(_ value: JSON, status: HTTPResponse.Status = .ok, style: JSONWriter.Style = .compact, headers: HTTPFields = [:]) -> Response {
        bytes(JSONWriter.bytes(value, style: style), status: status, headers: headers)
    }

    static func bytes(_ bytes: [UInt8], status: HTTPResponse.Status = .ok, headers extra: HTTPFields = [:]) -> Response {
        var headers = extra
        // The caller's content type wins (a bundle is bytes, not JSON).
        if headers[.contentType] == nil { headers[.contentType] = "application/json; charset=utf-8" }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func buffer(_ buffer: ByteBuffer, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json; charset=utf-8"], body: .init(byteBuffer: buffer))
    }
}
