import FiregateModel
import Synchronization

/// One server-sent event in `text/event-stream` framing (`event: put\ndata: {…}\n\n`), built
/// once per location and change and shared by every stream that sends it. `update` keeps the
/// same event as data, for subscribers inside the server (edge clients) that do not parse text.
public final class TreeStreamFrame: Sendable {
    /// The event types of the Realtime Database REST stream.
    public enum Kind: String, Sendable {
        case put
        case patch
        case keepAlive = "keep-alive"
        case cancel
        case authRevoked = "auth_revoked"
    }

    public let kind: Kind
    public let bytes: [UInt8]
    /// The `put` or `patch` this frame carries; nil for keep-alive and cancel.
    public let update: TreeStreamUpdate?
    /// The frame in another wire's encoding (a socket push), made once for every subscriber.
    private let derived = Mutex<[UInt8]?>(nil)

    public init(kind: Kind, data: [UInt8], update: TreeStreamUpdate? = nil) {
        self.kind = kind
        self.update = update
        var bytes: [UInt8] = Array("event: \(kind.rawValue)\ndata: ".utf8)
        bytes.reserveCapacity(bytes.count + data.count + 2)
        bytes.append(contentsOf: data)
        bytes.append(contentsOf: [0x0A, 0x0A])
        self.bytes = bytes
    }

    public convenience init(_ update: TreeStreamUpdate, format: TreeFormat) {
        self.init(kind: update.kind, data: update.payload(format: format), update: update)
    }

    /// The frame as another wire encodes it: `make` runs for the first subscriber that asks,
    /// the others share its bytes (a thousand sockets on one location encode a change once).
    public func derivedEncoding(_ make: () -> [UInt8]) -> [UInt8] {
        if let bytes = derived.withLock({ $0 }) { return bytes }
        let bytes = make()
        derived.withLock { $0 = bytes }
        return bytes
    }

    /// `event: keep-alive` / `data: null`, the same frame for every stream.
    public static let keepAlive = TreeStreamFrame(kind: .keepAlive, data: Array("null".utf8))

    /// `event: cancel` with the reason as a JSON string; the stream closes after it.
    public static func cancel(_ reason: String) -> TreeStreamFrame {
        var data: [UInt8] = []
        JSONWriter.writeString(reason, into: &data)
        return TreeStreamFrame(kind: .cancel, data: data)
    }
}
