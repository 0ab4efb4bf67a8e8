@testable import FiregateEdge
import FiregateModel
import XCTest

/// The write pipeline's bookkeeping alone: rounds of at most ten batches in queue order, never
/// a batch twice on the wire, and the SDK's backoff.
final class WritePipelineStateTests: XCTestCase {
    func batches(_ ids: ClosedRange<Int64>) -> [MutationBatch] {
        ids.map { MutationBatch(id: $0, localWriteTime: Timestamp(seconds: 1, nanos: 0), writes: []) }
    }

    func testRoundsTakeTheOldestBatchesNotOnTheWire() {
        var pipeline = WritePipeline()
        XCTAssertTrue(pipeline.startSending())
        XCTAssertFalse(pipeline.startSending(), "one sender at a time")
        let queue = batches(1...12)
        XCTAssertEqual(pipeline.takeRound(from: queue).map(\.id), Array(1...10))
        XCTAssertEqual(pipeline.takeRound(from: queue).map(\.id), [], "the oldest is on the wire: order is kept")
        XCTAssertFalse(pipeline.take(3), "a batch on the wire is not sent twice")
        pipeline.answered(Array(1...10))
        XCTAssertEqual(pipeline.takeRound(from: Array(queue.dropFirst(10))).map(\.id), [11, 12])
        XCTAssertTrue(pipeline.take(13))
        pipeline.stopSending()
        XCTAssertTrue(pipeline.startSending())
    }

    func testBackoffGrowsByHalfUpToAMinuteAndResetsOnSuccess() {
        var pipeline = WritePipeline()
        XCTAssertEqual((0..<4).map { _ in pipeline.backOff() }, [1, 1.5, 2.25, 3.375])
        for _ in 0..<20 { _ = pipeline.backOff() }
        XCTAssertEqual(pipeline.retryDelay, 60)
        pipeline.succeeded()
        XCTAssertEqual(pipeline.retryDelay, 0)
        XCTAssertEqual(pipeline.backOff(), 1)
    }

    func testInjectedRejectionsAreUsedOncePerWrite() {
        var network = NetworkConditions()
        network.rejectWrites = (2, .permissionDenied)
        XCTAssertEqual(network.takeInjectedRejection()?.status, .permissionDenied)
        XCTAssertEqual(network.takeInjectedRejection()?.status, .permissionDenied)
        XCTAssertNil(network.takeInjectedRejection())
        XCTAssertNil(network.rejectWrites)
    }
}
