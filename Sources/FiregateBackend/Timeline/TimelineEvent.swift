import FiregateModel
import OrderedCollections

/// One step of a client's or a connection's offline story (docs/timeline.md): when, on the
/// server's clock, in which lane, of what kind, with the few facts that say what it was.
public struct TimelineEvent: Sendable {
    /// Order over every lane; events recorded at the same frozen clock time keep it.
    public let seq: Int64
    public let lane: String
    public let time: Timestamp
    public let kind: Kind
    public let fields: [(String, JSON)]
    /// A snapshot's changed documents (the first `listedChanges`), rendered as `changed`.
    public let changed: [TimelineChange]
    /// An acknowledged write's commit time, rendered as `commitTime` (formatted only when read).
    public let commitTime: Timestamp?

    /// The kinds of step, by the names `?kinds=` filters on.
    public enum Kind: String, Sendable, CaseIterable {
        /// created, restored, restarted, terminated, deleted (a client); opened, closed (a connection).
        case lifecycle
        /// The client or connection went offline or came back (`online`, `cause`).
        case network
        /// A write entered the client's queue (`writeId`, `writes`, `documents`).
        case writeQueued
        /// A write left for the server (a client) or reached it (a connection).
        case writeSent
        case writeAcknowledged
        /// Refused: `status`, `message`, and `decision` when the rules refused it.
        case writeRejected
        /// A listener or a watch target opened (`listener`, `target`) or closed (`reason`).
        case listenOpened
        case listenClosed
        /// A snapshot raised to a listener: its metadata, change and document counts.
        case snapshot
        case onDisconnectRegistered
        case onDisconnectRan
        /// The cache's garbage collector removed documents and targets.
        case gc
        /// A tab opened, closed, or became primary (`action`, `tab`).
        case tab
    }

    /// Changed documents listed per snapshot event; `changes` says how many there were.
    public static let listedChanges = 20

    public init(seq: Int64, lane: String, time: Timestamp, kind: Kind, fields: [(String, JSON)], changed: [TimelineChange] = [],
                commitTime: Timestamp? = nil) {
        self.seq = seq
        self.lane = lane
        self.time = time
        self.kind = kind
        self.fields = fields
        self.changed = changed
        self.commitTime = commitTime
    }

    /// `{"seq","lane","time","ms","kind",…fields}`: `ms` is the time in epoch milliseconds
    /// with a fraction, for drawing.
    public var json: JSON {
        var members: [(String, JSON)] = [
            ("seq", .int(seq)), ("lane", .string(lane)), ("time", .string(time.rfc3339)),
            ("ms", .double(Double(time.microseconds) / 1000)), ("kind", .string(kind.rawValue)),
        ]
        members += fields
        if let commitTime { members.append(("commitTime", .string(commitTime.rfc3339))) }
        if kind == .snapshot {
            members.append(("changed", .array(changed.map { ["type": .string($0.type), "path": .string($0.path)] })))
        }
        return .object(OrderedDictionary(members, uniquingKeysWith: { first, _ in first }))
    }
}

/// One document a snapshot changed: `added`, `modified`, `removed` (a listener's view) or
/// `changed` (a stream's), and its path. Kept as two strings; JSON only when read.
public struct TimelineChange: Sendable {
    public let type: String
    public let path: String

    public init(_ type: String, _ path: String) {
        self.type = type
        self.path = path
    }
}

/// A lane of the timeline: one edge client or one real SDK connection.
public struct TimelineLane: Sendable {
    /// `client:{id}` or `connection:{id}`.
    public let id: String
    /// `client` or `connection`.
    public let kind: String
    /// The client's or connection's own id.
    public let name: String
    /// `edge` for an edge client; a connection's protocol (`grpc`, `rtdb-websocket`, `webchannel`).
    public let `protocol`: String
    public internal(set) var project: String?
    /// A connection's Firebase app id (`X-Firebase-GMPID`), which names the app across its reconnections.
    public let appId: String?
    public let opened: Timestamp
    public var closed: Timestamp?

    public static func clientID(_ id: String) -> String { "client:\(id)" }
    public static func connectionID(_ id: String) -> String { "connection:\(id)" }

    public init(kind: String, name: String, protocol: String, project: String?, appId: String? = nil, opened: Timestamp) {
        self.id = "\(kind):\(name)"
        self.kind = kind
        self.name = name
        self.protocol = `protocol`
        self.project = project
        self.appId = appId
        self.opened = opened
    }

    public var json: JSON {
        var members: [(String, JSON)] = [
            ("id", .string(id)), ("kind", .string(kind)), ("name", .string(name)),
            ("protocol", .string(`protocol`)), ("opened", .string(opened.rfc3339)),
        ]
        if let project { members.append(("project", .string(project))) }
        if let appId { members.append(("appId", .string(appId))) }
        if let closed { members.append(("closed", .string(closed.rfc3339))) }
        return .object(OrderedDictionary(members, uniquingKeysWith: { first, _ in first }))
    }
}
