@testable import FiregateHTTP
import FiregateWebChannel
import NIOCore
import XCTest

/// Back-channel chunks shared by sessions that write the same arrays.
final class WebChannelChunkCacheTests: XCTestCase {
    func text(_ buffer: ByteBuffer) -> String { String(buffer: buffer) }

    func testTheSameArraysAreOneBufferInHTTPChunkedCoding() {
        let cache = WebChannelChunkCache()
        let payload = WebChannelFraming.message(#"{"documentChange":{"targetIds":[2]}}"#)
        let arrays = [WebChannelArray(id: 7, payload: payload), WebChannelArray(id: 8, payload: WebChannelFraming.noop)]
        let chunk = cache.chunk(arrays)
        let frame = WebChannelBackChannelWriter.chunk(arrays).frame
        XCTAssertEqual(text(chunk.bytes), String(frame.readableBytes, radix: 16) + "\r\n" + text(frame) + "\r\n")
        XCTAssertEqual(chunk.length, WebChannelFraming.chunk(WebChannelFraming.arrays(arrays)).utf16.count)

        let again = cache.chunk([WebChannelArray(id: 7, payload: payload), WebChannelArray(id: 8, payload: WebChannelFraming.noop)])
        again.bytes.withUnsafeReadableBytes { shared in
            chunk.bytes.withUnsafeReadableBytes { first in XCTAssertEqual(shared.baseAddress, first.baseAddress, "one buffer for both") }
        }
    }

    func testOtherIdsOrPayloadsOfTheSameLengthAreOtherChunks() {
        let cache = WebChannelChunkCache()
        let a = cache.chunk([WebChannelArray(id: 3, payload: #"["aa"]"#)])
        let b = cache.chunk([WebChannelArray(id: 3, payload: #"["bb"]"#)])
        let c = cache.chunk([WebChannelArray(id: 4, payload: #"["aa"]"#)])
        XCTAssertTrue(text(a.bytes).contains(#"[[3,["aa"]]]"#))
        XCTAssertTrue(text(b.bytes).contains(#"[[3,["bb"]]]"#))
        XCTAssertTrue(text(c.bytes).contains(#"[[4,["aa"]]]"#))
    }

    func testALargeChunkIsEncodedButNotKept() {
        let cache = WebChannelChunkCache()
        let big = [WebChannelArray(id: 1, payload: "[\"" + String(repeating: "x", count: WebChannelChunkCache.largest) + "\"]")]
        let first = cache.chunk(big), second = cache.chunk(big)
        XCTAssertEqual(first.bytes, second.bytes)
        first.bytes.withUnsafeReadableBytes { one in
            second.bytes.withUnsafeReadableBytes { two in XCTAssertNotEqual(one.baseAddress, two.baseAddress) }
        }
    }
}
