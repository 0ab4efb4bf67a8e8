import FiregateModel

/// The simulated device network of one client: the switch plus injected faults.
public struct NetworkConditions: Sendable, Equatable {
    public var online = true
    /// Delay added before each request the client sends to the backend.
    public var latencyMs: Int64 = 0
    /// The next `count` writes the client sends are rejected with `status` instead of committed.
    public var rejectWrites: (count: Int, status: Status)?

    public init() {}

    public static func == (a: NetworkConditions, b: NetworkConditions) -> Bool {
        a.online == b.online && a.latencyMs == b.latencyMs && a.rejectWrites?.count == b.rejectWrites?.count
            && a.rejectWrites?.status == b.rejectWrites?.status
    }

    /// Applies a `PUT /clients/{id}/network` body; absent fields keep their value.
    public mutating func update(_ json: JSON) throws(FiregateError) {
        guard case .object = json else { throw .invalidArgument("Network conditions must be a JSON object.") }
        if let online = json["online"], online != .null {
            guard let b = online.boolValue else { throw .invalidArgument("online must be a boolean.") }
            self.online = b
        }
        if let latency = json["latencyMs"], latency != .null {
            guard case .int(let n) = latency, n >= 0, n <= 60_000 else { throw .invalidArgument("latencyMs must be an integer from 0 to 60000.") }
            latencyMs = n
        }
        if let reject = json["rejectWrites"] {
            if reject == .null {
                rejectWrites = nil
            } else {
                let count = reject["count"]?.integerLike ?? 1
                guard count >= 0 else { throw .invalidArgument("rejectWrites.count must not be negative.") }
                let name = reject["status"]?.stringValue ?? reject["status"]?.integerLike.map { String($0) } ?? "PERMISSION_DENIED"
                guard let status = Status(name: name), status != .ok else { throw .invalidArgument("Unknown status \"\(name)\".") }
                rejectWrites = count == 0 ? nil : (Int(count), status)
            }
        }
    }

    /// The injected rejection for the next write sent, if one is left (each is used once).
    mutating func takeInjectedRejection() -> FiregateError? {
        guard let (count, status) = rejectWrites else { return nil }
        rejectWrites = count > 1 ? (count - 1, status) : nil
        return FiregateError(status, "The write was rejected by the injected network condition (\(status.rawValue)).")
    }

    public var json: JSON {
        var result: JSON = ["online": .bool(online), "latencyMs": .int(latencyMs)]
        if let rejectWrites {
            result = result.withMember("rejectWrites", ["count": .int(Int64(rejectWrites.count)), "status": .string(rejectWrites.status.rawValue)])
        }
        return result
    }
}

extension Status {
    /// Write errors the SDK treats as permanent: the batch is rejected and reverted
    /// (remote/rpc_error.ts); every other status is retried.
    public var isPermanentWriteError: Bool {
        switch self {
        case .invalidArgument, .notFound, .alreadyExists, .permissionDenied, .failedPrecondition, .outOfRange, .unimplemented, .dataLoss:
            true
        default:
            false
        }
    }
}
