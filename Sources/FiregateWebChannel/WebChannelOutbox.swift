import DequeModule

/// A session's server-to-client arrays: numbered from 1 (array 0 is the handshake's `c`), kept
/// until the client acknowledges them (`AID` on its next request), so that a new back channel
/// sends again whatever the last one may have lost.
public struct WebChannelOutbox: Sendable {
    /// The id of the last array added.
    public private(set) var lastID = 0
    /// The highest id the client acknowledged.
    public private(set) var acknowledged = 0
    /// The characters of the arrays not yet acknowledged.
    public private(set) var outstanding = 0
    private var arrays: Deque<WebChannelArray> = []

    public init() {}

    /// Adds a payload under the next id and returns that id.
    @discardableResult
    public mutating func append(_ payload: String, length: Int? = nil) -> Int {
        lastID += 1
        let array = WebChannelArray(id: lastID, payload: payload, payloadLength: length)
        outstanding += array.size
        arrays.append(array)
        return lastID
    }

    /// Drops the arrays up to `id` (ids beyond the last sent are not the client's to
    /// acknowledge, and are ignored).
    public mutating func acknowledge(through id: Int) {
        let id = min(id, lastID)
        guard id > acknowledged else { return }
        acknowledged = id
        while let first = arrays.first, first.id <= id {
            outstanding -= first.size
            arrays.removeFirst()
        }
    }

    /// How many arrays wait for acknowledgement.
    public var unacknowledged: Int { arrays.count }

    /// The arrays after `id`, at most `limit` characters' worth (always at least one).
    public func arrays(after id: Int, limit: Int = .max) -> [WebChannelArray] {
        // Ids are consecutive: the first one after `id` is found without a scan (a page that
        // streams and never posts leaves every array of its back channel unacknowledged).
        guard let first = arrays.first?.id else { return [] }
        var index = max(0, id + 1 - first)
        var out: [WebChannelArray] = []
        var size = 0
        while index < arrays.count {
            let array = arrays[index]
            if !out.isEmpty, size + array.size > limit { break }
            out.append(array)
            size += array.size
            index += 1
        }
        return out
    }
}

/// The client's messages put back in map order: forward POSTs may arrive out of order (up to
/// ten at once over HTTP/2) and as retries repeating maps already delivered.
public struct WebChannelForwardOrder: Sendable {
    /// The next map id to deliver.
    public private(set) var next = 0
    private var early: [Int: String] = [:]

    /// How far ahead of the next expected map a POST may start.
    public static let window = 10 * 1000

    public init() {}

    /// The messages now deliverable, in order; maps already delivered are ignored.
    public mutating func accept(offset: Int, messages: [String]) throws(WebChannelOrderError) -> [String] {
        guard offset <= next + WebChannelForwardOrder.window else { throw WebChannelOrderError(expected: next, offset: offset) }
        for (k, message) in messages.enumerated() where offset + k >= next {
            early[offset + k] = message
        }
        var ready: [String] = []
        while let message = early.removeValue(forKey: next) {
            ready.append(message)
            next += 1
        }
        return ready
    }
}

/// A forward POST that starts too far beyond the maps received.
public struct WebChannelOrderError: Error, Sendable {
    public let expected: Int
    public let offset: Int
}
