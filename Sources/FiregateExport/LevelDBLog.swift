import FiregateModel

/// LevelDB's log format, which the export files are written in (docs/export-format.md): 32 KiB
/// blocks of fragments, each a 7-byte header — masked CRC-32C of type and payload, length, type —
/// and its payload; a record too long for what is left of a block is split FIRST, MIDDLE…, LAST,
/// and fewer than 7 bytes left in a block are zero filler.
public enum LevelDBLog {
    static let blockSize = 32_768
    static let headerSize = 7

    enum FragmentType: UInt8 {
        case full = 1, first = 2, middle = 3, last = 4
    }

    /// Frames records the way the emulator writes them: no padding after the last.
    public static func write(_ records: [[UInt8]]) -> [UInt8] {
        var out: [UInt8] = []
        for record in records { append(record, to: &out) }
        return out
    }

    public static func append(_ record: [UInt8], to out: inout [UInt8]) {
        var rest = record[...]
        var first = true
        repeat {
            let left = blockSize - out.count % blockSize
            if left < headerSize {
                out.append(contentsOf: repeatElement(0, count: left))
                continue
            }
            let length = min(rest.count, left - headerSize)
            let last = length == rest.count
            let type: FragmentType = first ? (last ? .full : .first) : (last ? .last : .middle)
            let payload = rest.prefix(length)
            let crc: UInt32 = CRC32C.masked(CRC32C.checksum(type: type.rawValue, payload))
            for shift: UInt32 in [0, 8, 16, 24] { out.append(UInt8(truncatingIfNeeded: crc >> shift)) }
            out.append(UInt8(truncatingIfNeeded: length))
            out.append(UInt8(truncatingIfNeeded: length >> 8))
            out.append(type.rawValue)
            out.append(contentsOf: payload)
            rest = rest.dropFirst(length)
            first = false
            if last { break }
        } while true
    }

    /// The records of a file. A checksum that does not match, a fragment out of order or a file
    /// cut inside a record is an error naming `file` and the record's number (from 0); zero
    /// padding (production pads its files to whole blocks) ends the data.
    public static func read(_ bytes: [UInt8], file: String) throws(FiregateError) -> [[UInt8]] {
        var records: [[UInt8]] = []
        var pending: [UInt8]?
        var offset = 0
        func failure(_ why: String) -> FiregateError {
            .invalidArgument("\(file): record \(records.count) (byte \(offset)): \(why).")
        }
        while offset < bytes.count {
            let left = blockSize - offset % blockSize
            if left < headerSize {
                offset += left
                continue
            }
            guard offset + headerSize <= bytes.count else {
                if bytes[offset...].allSatisfy({ $0 == 0 }) { break }
                throw failure("the file ends inside a header")
            }
            let crc = UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
            let length = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8
            let rawType = bytes[offset + 6]
            if rawType == 0 && crc == 0 && length == 0 {
                // Padding: the rest of this block is empty.
                offset += left
                continue
            }
            guard let type = FragmentType(rawValue: rawType) else { throw failure("unknown fragment type \(rawType)") }
            guard headerSize + length <= left else { throw failure("a fragment runs past its block") }
            guard offset + headerSize + length <= bytes.count else { throw failure("the file ends inside a record (truncated)") }
            let payload = bytes[(offset + headerSize)..<(offset + headerSize + length)]
            guard CRC32C.masked(CRC32C.checksum(type: rawType, payload)) == crc else { throw failure("bad checksum") }
            switch type {
            case .full:
                guard pending == nil else { throw failure("a whole record inside a split one") }
                records.append(Array(payload))
            case .first:
                guard pending == nil else { throw failure("a record starts inside a split one") }
                pending = Array(payload)
            case .middle:
                guard pending != nil else { throw failure("the middle of a record that did not start") }
                pending?.append(contentsOf: payload)
            case .last:
                guard var whole = pending else { throw failure("the end of a record that did not start") }
                whole.append(contentsOf: payload)
                records.append(whole)
                pending = nil
            }
            offset += headerSize + length
        }
        if pending != nil { throw failure("the file ends inside a record (truncated)") }
        return records
    }
}
