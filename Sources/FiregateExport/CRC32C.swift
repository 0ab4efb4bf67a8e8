/// CRC-32C (Castagnoli), and the mask LevelDB's log puts on it (docs/export-format.md): a
/// checksum stored beside data that may itself hold checksums is rotated and offset.
enum CRC32C {
    private static let table: [UInt32] = (0..<256).map { byte in
        var crc = UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
        return crc
    }

    static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        checksum(type: nil, bytes)
    }

    /// The checksum of an optional leading byte (a fragment's type) followed by `bytes`.
    static func checksum(type: UInt8?, _ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        if let type { crc = table[Int((crc ^ UInt32(type)) & 0xFF)] ^ (crc >> 8) }
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }

    static func masked(_ crc: UInt32) -> UInt32 {
        ((crc >> 15) | (crc << 17)) &+ 0xA282_EAD8
    }
}
