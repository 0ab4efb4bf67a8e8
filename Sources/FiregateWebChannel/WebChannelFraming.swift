/// WebChannel's framing (docs/webchannel.md, "Framing"): every answer is a sequence of chunks,
/// each its length in UTF-16 code units (what the browser's JavaScript counts), a newline, then
/// exactly that text. Back-channel text is a JSON array of `[arrayId, payload]` pairs.
public enum WebChannelFraming {
    /// Wire version 8, the only one the SDKs speak.
    public static let version = 8

    /// One chunk: `<length>\n<text>`.
    public static func chunk(_ text: String) -> String {
        "\(text.utf16.count)\n" + text
    }

    /// `[[id,payload],…]` for arrays whose payloads are JSON texts.
    public static func arrays<S: Sequence>(_ arrays: S) -> String where S.Element == WebChannelArray {
        var text = "["
        var first = true
        for array in arrays {
            if !first { text += "," }
            first = false
            text += "[\(array.id),\(array.payload)]"
        }
        return text + "]"
    }

    /// The length `chunk(arrays(arrays))` announces, counted from the arrays' known payload
    /// lengths (everything around them is ASCII) instead of from the text.
    public static func arraysLength(_ arrays: [WebChannelArray]) -> Int {
        var length = 2 + max(arrays.count - 1, 0)
        for array in arrays { length += array.payloadLength + 3 + decimalDigits(array.id) }
        return length
    }

    static func decimalDigits(_ value: Int) -> Int {
        var digits = 1, rest = value
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        return digits
    }

    /// The handshake's answer, array 0: `["c", SID, host prefix, version, server version,
    /// keep-alive interval in ms]` — the fields the Firestore emulator sends (the client
    /// waits 1.5 × the interval for back-channel bytes before it retries).
    public static func handshake(sessionID: String, keepAliveMilliseconds: Int) -> String {
        chunk(#"[[0,["c","\#(sessionID)","",\#(version),12,\#(keepAliveMilliseconds)]]]"#)
    }

    /// A forward POST's answer: whether a back channel is open, the last array id written to
    /// one, and how many characters were written but not yet acknowledged.
    public static func forwardAnswer(backChannelOpen: Bool, lastArrayID: Int, outstanding: Int) -> String {
        chunk("[\(backChannelOpen ? 1 : 0),\(lastArrayID),\(outstanding)]")
    }

    /// Payloads the channel itself sends.
    public static let noop = #"["noop"]"#
    public static let stop = #"["stop"]"#

    /// A Firestore message as a payload: an array holding exactly that message (the SDK reads
    /// element 0 and nothing else).
    public static func message(_ json: String) -> String { "[\(json)]" }
}

/// A Firestore message as a payload (`WebChannelFraming.message`) with its length in UTF-16
/// units, counted once: a commit fanned out to many sessions is the same payload for each.
public struct WebChannelMessage: Sendable {
    public let payload: String
    public let length: Int

    public init(json: String) {
        payload = WebChannelFraming.message(json)
        length = payload.utf16.count
    }
}

/// One server-to-client array: its id in the session and its payload's JSON text.
public struct WebChannelArray: Sendable, Equatable {
    public let id: Int
    public let payload: String
    /// The payload's length in UTF-16 units.
    public let payloadLength: Int

    public init(id: Int, payload: String, payloadLength: Int? = nil) {
        self.id = id
        self.payload = payload
        self.payloadLength = payloadLength ?? payload.utf16.count
    }

    /// The characters it takes in a chunk (`[id,` … `]` and a comma).
    var size: Int { payloadLength + 8 }
}
