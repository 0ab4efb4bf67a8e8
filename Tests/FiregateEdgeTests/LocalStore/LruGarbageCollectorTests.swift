import FiregateModel
import XCTest

@testable import FiregateEdge

/// The LRU collector's rules (the SDK's lru_garbage_collector_impl.ts) on a target cache.
final class LruGarbageCollectorTests: XCTestCase {
    func path(_ id: String) -> ResourcePath { ResourcePath(["c", id]) }

    /// Target "all" holds a and b (older), target "one" holds c (newer); d is cached alone.
    func makeCache() -> TargetCache {
        var cache = TargetCache()
        cache.beginOperation()  // 1
        cache.allocate("all")
        cache.applyServerResult("all", documents: [path("a"), path("b")])
        cache.beginOperation()  // 2
        cache.release("all")
        cache.beginOperation()  // 3
        cache.allocate("one")
        cache.applyServerResult("one", documents: [path("c")])
        cache.beginOperation()  // 4
        cache.touch(path("d"))
        return cache
    }

    func testSequenceNumbersFollowOperations() {
        let cache = makeCache()
        XCTAssertEqual(cache.targets["all"]?.sequenceNumber, 2, "released at operation 2")
        XCTAssertEqual(cache.targets["one"]?.sequenceNumber, 3)
        XCTAssertEqual(cache.documentSequence[path("a")], 1)
        XCTAssertEqual(cache.documentSequence[path("d")], 4)
        XCTAssertTrue(cache.isInTarget(path("a")))
        XCTAssertFalse(cache.isInTarget(path("d")))
        XCTAssertTrue(cache.hasCachedResults("all"))
    }

    func testBelowThresholdOrDisabledNothingRuns() {
        let cache = makeCache()
        let documents = ["a", "b", "c", "d"].map(path)
        let below = LruGarbageCollector.plan(targets: cache, documents: documents, cacheBytes: 999, activeQueries: [], pinned: [],
                                             parameters: .init(thresholdBytes: 1000, percentile: 100))
        XCTAssertEqual(below, LruGarbageCollector.Plan())
        let disabled = LruGarbageCollector.plan(targets: cache, documents: documents, cacheBytes: 1 << 30, activeQueries: [], pinned: [],
                                                parameters: .init(thresholdBytes: -1, percentile: 100))
        XCTAssertFalse(disabled.didRun)
    }

    func testEverythingUnheldGoesAtTheHundredthPercentile() {
        let cache = makeCache()
        let plan = LruGarbageCollector.plan(targets: cache, documents: ["a", "b", "c", "d"].map(path), cacheBytes: 10,
                                            activeQueries: ["one"], pinned: [path("b")], parameters: .init(thresholdBytes: 1, percentile: 100))
        XCTAssertTrue(plan.didRun)
        XCTAssertEqual(plan.sequenceNumbersCollected, 3, "two targets and d; a, b and c are in targets")
        XCTAssertEqual(plan.targets, ["all"], "the active target stays")
        XCTAssertEqual(plan.documents, [path("a"), path("d")], "c is in the active target, b has a pending write")
    }

    func testOldestFirstWithALowPercentile() {
        var cache = TargetCache()
        var documents: [ResourcePath] = []
        for i in 0..<20 {
            cache.beginOperation()
            let p = path(String(format: "d%02d", i))
            cache.touch(p)
            documents.append(p)
        }
        let plan = LruGarbageCollector.plan(targets: cache, documents: documents, cacheBytes: 10, activeQueries: [], pinned: [],
                                            parameters: .init(thresholdBytes: 0, percentile: 10))
        XCTAssertEqual(plan.sequenceNumbersCollected, 2)
        XCTAssertEqual(plan.documents, [path("d00"), path("d01")], "the two least recently used")
        let capped = LruGarbageCollector.plan(targets: cache, documents: documents, cacheBytes: 10, activeQueries: [], pinned: [],
                                              parameters: .init(thresholdBytes: 0, percentile: 100, maximumSequenceNumbers: 5))
        XCTAssertEqual(capped.documents.count, 5)
    }

    func testTargetCacheSizesFollowChanges() {
        var cache = makeCache()
        let size = cache.byteSize
        XCTAssertGreaterThan(size, 0)
        cache.remove("all")
        XCTAssertFalse(cache.isInTarget(path("a")))
        XCTAssertLessThan(cache.byteSize, size)
        cache.remove("one")
        XCTAssertEqual(cache.byteSize, 0)
        var restored = TargetCache()
        restored.restore(targets: ["q": .init(sequenceNumber: 7, documents: [path("x")], synced: true)], documentSequence: [path("x"): 9])
        XCTAssertEqual(restored.current, 9, "numbering continues after the largest restored")
        XCTAssertTrue(restored.isInTarget(path("x")))
    }
}
