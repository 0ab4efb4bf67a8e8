/// The canonical status codes of google.rpc.Code, shared by every surface.
public enum Status: String, Sendable, CaseIterable {
    case ok = "OK"
    case cancelled = "CANCELLED"
    case unknown = "UNKNOWN"
    case invalidArgument = "INVALID_ARGUMENT"
    case deadlineExceeded = "DEADLINE_EXCEEDED"
    case notFound = "NOT_FOUND"
    case alreadyExists = "ALREADY_EXISTS"
    case permissionDenied = "PERMISSION_DENIED"
    case resourceExhausted = "RESOURCE_EXHAUSTED"
    case failedPrecondition = "FAILED_PRECONDITION"
    case aborted = "ABORTED"
    case outOfRange = "OUT_OF_RANGE"
    case unimplemented = "UNIMPLEMENTED"
    case `internal` = "INTERNAL"
    case unavailable = "UNAVAILABLE"
    case dataLoss = "DATA_LOSS"
    case unauthenticated = "UNAUTHENTICATED"

    /// The numeric gRPC code.
    public var code: Int {
        switch self {
        case .ok: 0
        case .cancelled: 1
        case .unknown: 2
        case .invalidArgument: 3
        case .deadlineExceeded: 4
        case .notFound: 5
        case .alreadyExists: 6
        case .permissionDenied: 7
        case .resourceExhausted: 8
        case .failedPrecondition: 9
        case .aborted: 10
        case .outOfRange: 11
        case .unimplemented: 12
        case .internal: 13
        case .unavailable: 14
        case .dataLoss: 15
        case .unauthenticated: 16
        }
    }

    /// The HTTP status production maps this code to (google/rpc/code.proto).
    public var httpStatus: Int {
        switch self {
        case .ok: 200
        case .cancelled: 499
        case .unknown, .internal, .dataLoss: 500
        case .invalidArgument, .failedPrecondition, .outOfRange: 400
        case .deadlineExceeded: 504
        case .notFound: 404
        case .alreadyExists, .aborted: 409
        case .permissionDenied: 403
        case .resourceExhausted: 429
        case .unimplemented: 501
        case .unavailable: 503
        case .unauthenticated: 401
        }
    }

    public init?(code: Int) {
        guard let match = Status.allCases.first(where: { $0.code == code }) else { return nil }
        self = match
    }

    /// Accepts a status by name ("PERMISSION_DENIED") or by number ("7").
    public init?(name: String) {
        if let match = Status(rawValue: name.uppercased()) { self = match; return }
        if let number = Int(name), let match = Status(code: number) { self = match; return }
        return nil
    }
}

/// The one error type of Firegate: a status and a message, rendered per surface by the HTTP layer.
public struct FiregateError: Error, Sendable, Equatable, CustomStringConvertible {
    public let status: Status
    public let message: String
    /// Set only where the contract names another HTTP code than the status's usual one.
    private let httpStatusOverride: Int?

    public init(_ status: Status, _ message: String) {
        self.status = status
        self.message = message
        httpStatusOverride = nil
    }

    public init(_ status: Status, _ message: String, httpStatus: Int) {
        self.status = status
        self.message = message
        httpStatusOverride = httpStatus
    }

    /// The HTTP status this error is answered with.
    public var httpStatus: Int { httpStatusOverride ?? status.httpStatus }

    /// An edge client in the wrong lifecycle state for the call (terminated, started, not
    /// terminated): FAILED_PRECONDITION answered with 412, as docs/edge-clients.md says.
    public static func clientState(_ message: String) -> FiregateError {
        FiregateError(.failedPrecondition, message, httpStatus: 412)
    }

    public var description: String { "\(status.rawValue): \(message)" }

    public static func invalidArgument(_ message: String) -> FiregateError { .init(.invalidArgument, message) }
    public static func notFound(_ message: String) -> FiregateError { .init(.notFound, message) }
    public static func failedPrecondition(_ message: String) -> FiregateError { .init(.failedPrecondition, message) }
    public static func alreadyExists(_ message: String) -> FiregateError { .init(.alreadyExists, message) }
    public static func aborted(_ message: String) -> FiregateError { .init(.aborted, message) }
    public static func unavailable(_ message: String) -> FiregateError { .init(.unavailable, message) }
    public static func `internal`(_ message: String) -> FiregateError { .init(.internal, message) }
    public static func unimplemented(_ message: String) -> FiregateError { .init(.unimplemented, message) }
    public static func resourceExhausted(_ message: String) -> FiregateError { .init(.resourceExhausted, message) }
    public static func cancelled(_ message: String) -> FiregateError { .init(.cancelled, message) }
}

extension JSON {
    /// `{"error":{"code":404,"message":"…","status":"NOT_FOUND"}}`, the Firestore REST error body.
    public static func errorBody(_ error: FiregateError) -> JSON {
        ["error": ["code": .int(Int64(error.httpStatus)), "message": .string(error.message), "status": .string(error.status.rawValue)]]
    }
}
