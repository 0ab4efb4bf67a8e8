import FiregateModel

/// What a request to a channel URL asks for, from its method and query (docs/webchannel.md,
/// "Requests"): `TYPE=terminate` ends a session; a GET with `TYPE=xmlhttp` is a back channel;
/// a POST without `SID` opens a session; a POST with one carries messages.
public enum WebChannelRequest: Sendable, Equatable {
    case handshake
    case forward(session: String, acknowledged: Int)
    /// `longPoll` (`CI=1`): answer once, then end; `timeout` (`TO`, ms) bounds the wait.
    case backChannel(session: String, acknowledged: Int, longPoll: Bool, timeoutMilliseconds: Int?)
    case terminate(session: String)

    /// Classifies a request; a malformed one is INVALID_ARGUMENT (answered 400, which the
    /// client takes as a fatal channel error).
    public static func classify(method: String, query: [String: String]) throws(FiregateError) -> WebChannelRequest {
        if let version = query["VER"], version != String(WebChannelFraming.version) {
            throw .invalidArgument("This server speaks WebChannel wire version 8; the request asks for VER=\(version).")
        }
        let session = query["SID"].flatMap { $0.isEmpty || $0 == "null" ? nil : $0 }
        let acknowledged = try query["AID"].map { (text: String) throws(FiregateError) -> Int in
            guard let id = Int(text), id >= 0 else { throw .invalidArgument("AID must be an array id; it is \(text).") }
            return id
        } ?? 0
        switch (method, query["TYPE"]) {
        case (_, "terminate"):
            guard let session else { throw .invalidArgument("A WebChannel terminate names its session (SID).") }
            return .terminate(session: session)
        case ("GET", "xmlhttp"):
            guard let session else { throw .invalidArgument("A WebChannel back channel names its session (SID).") }
            let timeout = query["TO"].flatMap(Int.init).map { max(0, $0) }
            return .backChannel(session: session, acknowledged: acknowledged, longPoll: query["CI"] == "1", timeoutMilliseconds: timeout)
        case ("POST", nil), ("POST", ""):
            guard let session else { return .handshake }
            return .forward(session: session, acknowledged: acknowledged)
        default:
            throw .invalidArgument("Not a WebChannel request: \(method) with TYPE=\(query["TYPE"] ?? "(none)"). "
                                   + "A session opens with a POST, sends with POSTs naming its SID, and reads with GET …&TYPE=xmlhttp.")
        }
    }

    /// The query of a URL, percent-decoded (`+` is a space, as in forms).
    public static func query(_ text: Substring) throws(FiregateError) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try PercentDecoding.decode(String(parts[0]), plusAsSpace: true)
            fields[name] = parts.count > 1 ? try PercentDecoding.decode(String(parts[1]), plusAsSpace: true) : ""
        }
        return fields
    }
}
