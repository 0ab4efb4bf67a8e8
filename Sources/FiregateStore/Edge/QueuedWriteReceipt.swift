import Foundation

/// An edge client's queued write (a document batch or a tree write) as its replica sends it to
/// the replica owning the data (docs/replicas.md), so that it applies once however often it is sent:
/// the owner's commit removes it from the client's stored queue and stores `answer` under its
/// key in the same transaction, only while `epoch` is still the client's owner epoch. A write
/// sent again (the answer was lost, or the client's replica died and the next one restored the
/// queue) is answered from the receipt; one from a replica that lost the client writes nothing.
/// A store of one process never sees one (its edge clients commit where their queue is).
public struct QueuedWriteReceipt: Sendable, Equatable, Hashable {
    public enum Kind: String, Sendable {
        case batch
        case tree
    }

    public var client: String
    public var kind: Kind
    /// The batch id or tree write id in the client's queue.
    public var id: Int64
    /// Tells apart writes of one id in queues cleared in between (a batch's local write time).
    public var stamp: Int64
    /// The client's owner epoch at the sending replica (0 until the sender sets it).
    public var epoch: Int64
    /// The owner's answer, as the sender reads it (set by the engine as it commits).
    public var answer: [UInt8]

    public init(client: String, kind: Kind, id: Int64, stamp: Int64, epoch: Int64 = 0, answer: [UInt8] = []) {
        self.client = client
        self.kind = kind
        self.id = id
        self.stamp = stamp
        self.epoch = epoch
        self.answer = answer
    }

    /// `<kind> <id> <stamp> <epoch> <client, percent-encoded>`: the `Firegate-Queued-Write`
    /// header's value.
    public var header: String {
        let encoded = client.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? client
        return "\(kind.rawValue) \(id) \(stamp) \(epoch) \(encoded)"
    }

    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    public init?(header: String) {
        let parts = header.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 5, let kind = Kind(rawValue: String(parts[0])), let id = Int64(parts[1]), let stamp = Int64(parts[2]),
              let epoch = Int64(parts[3]), let client = String(parts[4]).removingPercentEncoding, !client.isEmpty else { return nil }
        self.init(client: client, kind: kind, id: id, stamp: stamp, epoch: epoch)
    }

    public static func == (a: Self, b: Self) -> Bool { a.client == b.client && a.kind == b.kind && a.id == b.id && a.stamp == b.stamp }
    public func hash(into hasher: inout Hasher) { hasher.combine(client); hasher.combine(kind); hasher.combine(id); hasher.combine(stamp) }
}
