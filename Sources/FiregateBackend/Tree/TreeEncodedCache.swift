import FiregateModel
import Synchronization

/// Compact plain JSON of recently read locations of one namespace, so repeated GETs of an
/// unchanged location skip encoding. Small, and cleared by any write at, above or below an
/// entry. Filled and cleared by the namespace actor; read without it, so the HTTP fast path
/// answers a cached location on the event loop.
final class TreeEncodedCache: Sendable {
    private let entries = Mutex<[TreePath: [UInt8]]>([:])
    static let maxEntries = 64
    static let maxBytes = 1 << 20

    func get(_ path: TreePath) -> [UInt8]? { entries.withLock { $0[path] } }

    func set(_ path: TreePath, _ bytes: [UInt8]) {
        guard bytes.count <= TreeEncodedCache.maxBytes else { return }
        entries.withLock { entries in
            if entries.count >= TreeEncodedCache.maxEntries { entries.removeAll(keepingCapacity: true) }
            entries[path] = bytes
        }
    }

    /// A write at `change`: every entry at, above or below it is stale.
    func invalidate(_ change: TreePath) {
        entries.withLock { entries in
            guard !entries.isEmpty else { return }
            for path in entries.keys where path.contains(change) || change.contains(path) {
                entries.removeValue(forKey: path)
            }
        }
    }

    func removeAll() { entries.withLock { $0.removeAll() } }
}
