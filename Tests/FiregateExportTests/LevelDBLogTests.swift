@testable import FiregateExport
import FiregateModel
import XCTest

/// LevelDB's log framing as the export files use it (docs/export-format.md).
final class LevelDBLogTests: XCTestCase {
    func testAWholeRecordHasTheMaskedChecksumOfItsTypeAndPayload() {
        // CRC-32C's check value, and the reference's worked header for a FULL `01 02 03`.
        XCTAssertEqual(CRC32C.checksum(Array("123456789".utf8)), 0xE306_9283)
        XCTAssertEqual(CRC32C.checksum(type: 1, [UInt8]([2, 3])), CRC32C.checksum([UInt8]([1, 2, 3])))
        let framed = LevelDBLog.write([[1, 2, 3]])
        let crc = CRC32C.masked(CRC32C.checksum([UInt8]([1, 1, 2, 3])))
        XCTAssertEqual(framed, [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 24), 3, 0, 1, 1, 2, 3])
    }

    func testRecordsAcrossBlocksAreSplitAndComeBackWhole() throws {
        var records: [[UInt8]] = []
        var generator = SystemRandomNumberGenerator()
        for size in [0, 1, 32_761, 32_760, 32_762, 70_000, 5, 32_768 * 3 + 11] {
            records.append((0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) })
        }
        let framed = LevelDBLog.write(records)
        XCTAssertEqual(try LevelDBLog.read(framed, file: "f"), records)
        // Production pads its files to whole blocks with zeros.
        let padded = framed + [UInt8](repeating: 0, count: LevelDBLog.blockSize - framed.count % LevelDBLog.blockSize)
        XCTAssertEqual(try LevelDBLog.read(padded, file: "f"), records)
        // Fewer than 7 bytes left in a block are filler: a record of 32 761 bytes leaves exactly 0,
        // one of 32 756 leaves 5.
        let filler = LevelDBLog.write([[UInt8](repeating: 7, count: 32_756), [9]])
        XCTAssertEqual(filler.count, LevelDBLog.blockSize + 8)
        XCTAssertEqual(try LevelDBLog.read(filler, file: "f"), [[UInt8](repeating: 7, count: 32_756), [9]])
    }

    func testDamageIsAnErrorNamingTheFileAndTheRecord() {
        let framed = LevelDBLog.write([[1, 2, 3], [4, 5, 6, 7]])
        var corrupted = framed
        corrupted[framed.count - 1] ^= 0xFF
        XCTAssertThrowsError(try LevelDBLog.read(corrupted, file: "output-0")) { error in
            XCTAssertEqual((error as? FiregateError)?.message, "output-0: record 1 (byte 10): bad checksum.")
        }
        XCTAssertThrowsError(try LevelDBLog.read(Array(framed.dropLast(2)), file: "output-0")) { error in
            XCTAssertTrue((error as? FiregateError)?.message.contains("truncated") == true)
        }
        let split = LevelDBLog.write([[UInt8](repeating: 1, count: 40_000)])
        XCTAssertThrowsError(try LevelDBLog.read(Array(split.prefix(LevelDBLog.blockSize)), file: "x")) { error in
            XCTAssertTrue((error as? FiregateError)?.message.contains("truncated") == true, "a split record whose end is missing")
        }
    }
}
