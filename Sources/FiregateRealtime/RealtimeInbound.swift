import FiregateModel

/// One whole message from a client, read from its JSON envelope (docs/wire/realtime-database.md:
/// Framing, Control messages, Requests): a request to answer, a control message, or something that cannot be answered.
public enum RealtimeInbound: Sendable, Equatable {
    /// `{"t":"d","d":{"r":n,"a":action,"b":body}}`: answered exactly once, under `number`.
    case request(number: Int64, action: String, body: JSON)
    /// `{"t":"c","d":{"t":type,"d":data}}`: a ping (`p`), or the long-polling upgrade's `n`/`a`.
    case control(type: String, data: JSON)
    /// Valid JSON that names no request to answer; the reason goes back as a server error (`e`).
    case unanswerable(String)
    /// Not JSON at all: the connection is closed with this reason.
    case malformed(String)

    public init(_ bytes: [UInt8]) {
        guard let json = try? JSONParser.parse(bytes) else {
            self = .malformed("A message must be a JSON object (protocol v5).")
            return
        }
        guard case .object = json, let kind = json.member("t")?.stringValue, let inner = json.member("d") else {
            self = .unanswerable("A message is {\"t\":\"d\"|\"c\",\"d\":{…}}.")
            return
        }
        switch kind {
        case "c":
            guard let type = inner.member("t")?.stringValue else {
                self = .unanswerable("A control message needs a type \"t\".")
                return
            }
            self = .control(type: type, data: inner.member("d") ?? .null)
        case "d":
            guard case .object = inner else {
                self = .unanswerable("A data message's \"d\" must be an object.")
                return
            }
            guard let number = inner.member("r")?.integerLike else {
                self = .unanswerable("A request needs a number \"r\" (server pushes are not accepted from clients).")
                return
            }
            guard let action = inner.member("a")?.stringValue else {
                self = .request(number: number, action: "", body: inner.member("b") ?? .null)
                return
            }
            self = .request(number: number, action: action, body: inner.member("b") ?? .null)
        default:
            self = .unanswerable("Unknown message type \"\(kind)\"; use \"d\" or \"c\".")
        }
    }
}
