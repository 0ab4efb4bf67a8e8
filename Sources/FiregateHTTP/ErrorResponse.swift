import FiregateModel
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

    /// Maps anything thrown below the HTTP layer to a `FiregateError`; unknown errors are INTERNAL.
    static func normalize(_ error: any Error) -> FiregateError {
        if let error = error as? FiregateError { return error }
        if let error = error as? JSONParseError { return .invalidArgument("Invalid JSON payload received. \(error)") }
        return .internal("\(error)")
    }
}
