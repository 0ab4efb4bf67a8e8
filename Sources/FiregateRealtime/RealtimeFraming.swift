/// The WebSocket framing of the Realtime Database protocol (docs/wire/realtime-database.md, Framing): a
/// JSON message longer than 16 384 characters travels as a count message (`"3"`) and then that
/// many pieces, joined by the reader. Characters are JavaScript's (UTF-16 code units).
public enum RealtimeFraming {
    /// Longest piece, in UTF-16 code units.
    public static let maxPieceLength = 16_384

    /// `message` as the texts to send: itself, or a count and the pieces. A piece never splits
    /// a surrogate pair (the reader joins text, so the cut point only has to be valid UTF-8).
    public static func split(_ message: [UInt8]) -> [[UInt8]] {
        // UTF-16 length ≤ UTF-8 length: short messages need no counting.
        if message.count <= maxPieceLength { return [message] }
        let text = String(decoding: message, as: UTF8.self)
        guard text.utf16.count > maxPieceLength else { return [message] }
        var pieces: [[UInt8]] = []
        var units = 0
        var current: [UInt8] = []
        for scalar in text.unicodeScalars {
            let width = scalar.utf16.count
            if units + width > maxPieceLength {
                pieces.append(current)
                current = []
                units = 0
            }
            current.append(contentsOf: String(scalar).utf8)
            units += width
        }
        if !current.isEmpty { pieces.append(current) }
        return [Array(String(pieces.count).utf8)] + pieces
    }
}

/// Joins what a client sends into whole messages: a bare number of at most 6 characters
/// announces that many pieces (`0` is the client's keep-alive and announces nothing); anything
/// else is a message, or the next piece of one. Bounded: a message may not pass `maxBytes`.
public struct RealtimeMessageAssembler: Sendable {
    public enum Result: Equatable, Sendable {
        /// Nothing whole yet (a count, a piece, or a keep-alive).
        case pending
        case message([UInt8])
        /// The input breaks the framing: close the connection with this reason.
        case failure(String)
    }

    public let maxBytes: Int
    private var expected = 0
    private var pieces: [UInt8] = []

    public init(maxBytes: Int) {
        self.maxBytes = maxBytes
    }

    /// Whether pieces of a split message are still awaited.
    public var isAssembling: Bool { expected > 0 }

    public mutating func add(_ text: [UInt8]) -> Result {
        if expected == 0, text.count <= 6, let count = Int(String(decoding: text, as: UTF8.self)) {
            guard count >= 0 else { return .failure("A piece count must not be negative.") }
            guard count <= (maxBytes / RealtimeFraming.maxPieceLength) + 1 else {
                return .failure("The message announced (\(count) pieces) is larger than the \(maxBytes) bytes a message may have.")
            }
            expected = count
            return .pending
        }
        guard expected > 0 else {
            guard text.count <= maxBytes else { return .failure("A message may have at most \(maxBytes) bytes.") }
            return .message(text)
        }
        guard pieces.count + text.count <= maxBytes else {
            return .failure("A message may have at most \(maxBytes) bytes.")
        }
        pieces.append(contentsOf: text)
        expected -= 1
        guard expected == 0 else { return .pending }
        defer { pieces = [] }
        return .message(pieces)
    }
}
