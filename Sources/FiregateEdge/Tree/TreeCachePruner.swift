import FiregateModel

/// The RTDB SDK's cache policy for the tree cache (`FCachePolicy`, `pruneOldQueries`): checked
/// after more than 1 000 server-cache writes; while the cache is over its size or more than
/// 1 000 inactive queries are tracked, the least recently used 20 % of the inactive queries
/// (at least the excess over 1 000) go, with the data only they held. Active queries —
/// listened to or kept synced — are never pruned.
enum TreeCachePruner {
    static let writesBetweenChecks = 1000
    static let maxInactiveQueries = 1000
    static let fractionToPrune = 0.2

    /// Whether enough server writes happened for a check.
    static func due(writesSinceCheck: Int) -> Bool { writesSinceCheck > writesBetweenChecks }

    /// Prunes `cache` until it fits; returns the queries removed and the paths whose data changed.
    static func prune(_ cache: inout TreeServerCache, maxBytes: Int64) -> (queries: [(TreeQuerySpec, Int64)], paths: [TreePath]) {
        var removed: [(TreeQuerySpec, Int64)] = []
        var paths: [TreePath] = []
        while true {
            let inactive = cache.tracked.filter { !$0.value.active }.sorted { ($0.value.lastUse, $0.value.id) < ($1.value.lastUse, $1.value.id) }
            let overSize = Int64(cache.byteSize()) > maxBytes
            guard overSize || inactive.count > maxInactiveQueries, !inactive.isEmpty else { break }
            let count = max(Int((Double(inactive.count) * fractionToPrune).rounded(.up)), inactive.count - maxInactiveQueries)
            let victims = inactive.prefix(count)
            guard !victims.isEmpty else { break }
            removed += victims.map { ($0.key, $0.value.id) }
            paths += cache.remove(victims.map(\.key))
        }
        return (removed, paths)
    }
}
