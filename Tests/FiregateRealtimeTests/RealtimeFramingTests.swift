import FiregateRealtime
import XCTest

/// The 16 384-character framing, both ways (docs/wire/realtime-database.md, Framing).
final class RealtimeFramingTests: XCTestCase {
    func testShortMessagesGoWhole() {
        let message = Array(#"{"t":"d","d":{}}"#.utf8)
        XCTAssertEqual(RealtimeFraming.split(message), [message])
        let atLimit = [UInt8](repeating: UInt8(ascii: "x"), count: 16_384)
        XCTAssertEqual(RealtimeFraming.split(atLimit), [atLimit])
    }

    func testLongMessagesAreCountedInUTF16UnitsAndNeverSplitASurrogatePair() {
        let ascii = [UInt8](repeating: UInt8(ascii: "x"), count: 40_000)
        let pieces = RealtimeFraming.split(ascii)
        XCTAssertEqual(pieces.map(\.count), [1, 16_384, 16_384, 7_232])
        XCTAssertEqual(pieces[0], Array("3".utf8))

        // 20 000 "é" are 40 000 UTF-8 bytes but 20 000 characters: two pieces.
        let accented = Array(String(repeating: "é", count: 20_000).utf8)
        XCTAssertEqual(RealtimeFraming.split(accented).first, Array("2".utf8))

        // Emoji are two UTF-16 units each: a piece holds 8 192 of them, none cut in half.
        let emoji = String(repeating: "😀", count: 10_000)
        let split = RealtimeFraming.split(Array(emoji.utf8))
        XCTAssertEqual(split[0], Array("2".utf8))
        let texts = split.dropFirst().map { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(texts.map(\.utf16.count), [16_384, 3_616])
        XCTAssertEqual(texts.joined(), emoji)
    }

    func testTheAssemblerJoinsCountedPiecesAndIgnoresKeepAlives() {
        var assembler = RealtimeMessageAssembler(maxBytes: 1 << 20)
        XCTAssertEqual(assembler.add(Array("0".utf8)), .pending)
        XCTAssertFalse(assembler.isAssembling)
        XCTAssertEqual(assembler.add(Array("2".utf8)), .pending)
        XCTAssertEqual(assembler.add(Array("12".utf8)), .pending, "a piece that looks like a number is still a piece")
        XCTAssertEqual(assembler.add(Array("34".utf8)), .message(Array("1234".utf8)))
        XCTAssertEqual(assembler.add(Array("1234567".utf8)), .message(Array("1234567".utf8)), "longer than 6 characters: a message")
        XCTAssertEqual(assembler.add(Array("{}".utf8)), .message(Array("{}".utf8)))
    }

    func testTheAssemblerIsBounded() {
        var assembler = RealtimeMessageAssembler(maxBytes: 40_000)
        guard case .failure = assembler.add(Array("9".utf8)) else { return XCTFail("9 pieces cannot fit in 40 000 bytes") }
        guard case .failure = assembler.add(Array("-1".utf8)) else { return XCTFail("a negative count") }
        XCTAssertEqual(assembler.add(Array("3".utf8)), .pending)
        XCTAssertEqual(assembler.add([UInt8](repeating: 0x41, count: 16_384)), .pending)
        XCTAssertEqual(assembler.add([UInt8](repeating: 0x41, count: 16_384)), .pending)
        guard case .failure = assembler.add([UInt8](repeating: 0x41, count: 16_384)) else { return XCTFail("past maxBytes") }
        var fresh = RealtimeMessageAssembler(maxBytes: 10)
        guard case .failure = fresh.add(Array("{\"t\":\"d\",\"d\":1}".utf8)) else { return XCTFail("a whole message past maxBytes") }
    }
}
