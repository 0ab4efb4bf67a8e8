import FiregateModel
import HTTPTypes
import Hummingbird

/// Renders a `FiregateError` in the shape of the surface that raised it — the single place
/// where statuses become HTTP codes.
enum ErrorResponse {
    /// Firestore shape: `{"error":{"code":404,"message":"…","status":"NOT_FOUND"}}`.
    static func firestore(_ error: FiregateError) -> Response {
        JSONResponse.make(JSON.errorBody(error), status: .init(code: error.httpStatus))
    }

    /// Realtime Database shape: `{"error":"…"}`, printed as production prints it
    /// (`{\n  "error" : "…"\n}`).
    static func tree(_ error: FiregateError) -> Response {
        JSONResponse.make(["error": .string(error.message)], status: .init(code: error.httpStatus), style: .pretty)
    }

    /// gRPC shape: the trailers `grpc-status` (the status's number; 0 for nil) and
    /// `grpc-message`, percent-encoded as the gRPC HTTP/2 protocol says.
    static func grpcTrailers(_ error: FiregateError?) -> HTTPFields {
        var trailers = HTTPFields()
        trailers[ErrorResponse.grpcStatus] = String(error?.status.code ?? 0)
        if let error, !error.message.isEmpty { trailers[ErrorResponse.grpcMessage] = percentEncodedGRPCMessage(error.message) }
        return trailers
    }

    /// WebChannel shape: the Firestore body as a stream's last message, in band (the SDK turns
    /// every HTTP status on a channel request into UNAVAILABLE, and reads `error.status` here).
    static func webChannel(_ error: FiregateError) -> String {
        JSONWriter.string(JSON.errorBody(error))
    }

    static let grpcStatus = HTTPField.Name("grpc-status")!
    static let grpcMessage = HTTPField.Name("grpc-message")!

    /// Every byte outside printable ASCII, and `%` itself, as `%XX` of its UTF-8 encoding.
    static func percentEncodedGRPCMessage(_ message: String) -> String {
        var out = ""
        out.reserveCapacity(message.utf8.count)
        for byte in message.utf8 {
            if byte >= 0x20, byte <= 0x7E, byte != UInt8(ascii: "%") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// Maps anything thrown below the HTTP layer to a `FiregateError`; unknown errors are INTERNAL.
    static func normalize(_ error: any Error) -> FiregateError {
        if let error = error as? FiregateError { return error }
        if let error = error as? JSONParseError { return .invalidArgument("Invalid JSON payload received. \(error)") }
        return .internal("\(error)")
    }
}
