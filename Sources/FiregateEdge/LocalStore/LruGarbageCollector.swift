import FiregateModel

/// The SDK's LRU garbage collector (local/lru_garbage_collector_impl.ts). When the cache is at
/// or over its threshold it counts the sequence numbers in use (one per target, one per
/// document no target holds), takes the lowest `percentile` of them (at most 1 000), and
/// removes the inactive targets and the unheld documents at or below that bound.
///
/// A pure planner: it says what to remove and the caller removes it, so the same rules serve
/// the schedule, `:collectGarbage` and tests.
public enum LruGarbageCollector {
    /// First scheduled run after start, then the interval between runs (server time).
    public static let initialDelayMicros: Int64 = 60 * 1_000_000
    public static let regularDelayMicros: Int64 = 5 * 60 * 1_000_000
    public static let defaultPercentile = 10
    public static let maximumSequenceNumbersToCollect = 1000

    public struct Parameters: Sendable, Equatable {
        /// Collect only when the cache holds at least this many bytes; -1 never collects.
        public var thresholdBytes: Int64
        public var percentile: Int = LruGarbageCollector.defaultPercentile
        public var maximumSequenceNumbers: Int = LruGarbageCollector.maximumSequenceNumbersToCollect

        public init(thresholdBytes: Int64, percentile: Int = LruGarbageCollector.defaultPercentile,
                    maximumSequenceNumbers: Int = LruGarbageCollector.maximumSequenceNumbersToCollect) {
            self.thresholdBytes = thresholdBytes
            self.percentile = percentile
            self.maximumSequenceNumbers = maximumSequenceNumbers
        }
    }

    /// What one pass removes (the SDK's LruResults, with the removed ids).
    public struct Plan: Sendable, Equatable {
        public var didRun = false
        public var sequenceNumbersCollected = 0
        public var targets: [String] = []
        public var documents: [ResourcePath] = []
    }

    /// Plans a pass over `targets` and the cached `documents`. `activeQueries` are the targets
    /// of open listeners; `pinned` documents are held by pending writes or shown by a view.
    public static func plan(targets cache: TargetCache, documents: some Collection<ResourcePath>, cacheBytes: Int,
                            activeQueries: Set<String>, pinned: Set<ResourcePath>, parameters: Parameters) -> Plan {
        var plan = Plan()
        guard parameters.thresholdBytes >= 0, Int64(cacheBytes) >= parameters.thresholdBytes else { return plan }
        plan.didRun = true
        // One sequence number per target and per document that nothing holds.
        var orphans: [(ResourcePath, Int64)] = []
        for path in documents where !cache.isInTarget(path) && !pinned.contains(path) {
            orphans.append((path, cache.documentSequence[path] ?? 0))
        }
        var numbers = cache.targets.values.map(\.sequenceNumber) + orphans.map(\.1)
        let count = min(numbers.count * max(0, min(parameters.percentile, 100)) / 100, parameters.maximumSequenceNumbers)
        plan.sequenceNumbersCollected = count
        guard count > 0 else { return plan }
        numbers.sort()
        let upperBound = numbers[count - 1]
        var remaining = cache
        for (queryID, target) in cache.targets where target.sequenceNumber <= upperBound && !activeQueries.contains(queryID) {
            plan.targets.append(queryID)
            remaining.remove(queryID)
        }
        plan.targets.sort()
        // Documents the removed targets held are orphans now, with their own numbers.
        for path in documents where !remaining.isInTarget(path) && !pinned.contains(path) && (cache.documentSequence[path] ?? 0) <= upperBound {
            plan.documents.append(path)
        }
        plan.documents.sort { ResourcePath.compare($0, $1) < 0 }
        return plan
    }
}
