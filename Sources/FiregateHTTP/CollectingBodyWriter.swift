import Hummingbird
import NIOCore

/// The bytes a response body wrote, gathered to be transformed (gzip) before sending.
final class CollectedBody: @unchecked Sendable {
    // Written by one body writer at a time, read after it finished.
    var bytes: [UInt8] = []
}

/// A body writer that keeps what it is given instead of sending it.
struct CollectingBodyWriter: ResponseBodyWriter {
    let target: CollectedBody

    mutating func write(_ buffer: ByteBuffer) async throws {
        target.bytes.append(contentsOf: buffer.readableBytesView)
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
