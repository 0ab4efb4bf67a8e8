import FiregateModel
import Foundation

/// The bloom filter watch sends with an existence filter (`unchangedNames`): which document
/// names the server still has for the target. Hashing as the protocol fixes it: MD5 of the
/// full resource name, read as two little-endian 64-bit integers h1, h2; bit i of the k hashes
/// is (h1 + i·h2) mod bitCount (remote/bloom_filter.ts).
struct BloomFilter: Sendable {
    let bitmap: [UInt8]
    let hashCount: Int
    let bitCount: Int

    /// nil when the filter is malformed (the SDK then falls back to a full re-query).
    init?(bitmap: [UInt8], padding: Int, hashCount: Int) {
        guard (0...7).contains(padding), hashCount >= 0 else { return nil }
        if bitmap.isEmpty, padding != 0 { return nil }
        if !bitmap.isEmpty, hashCount == 0 { return nil }
        self.bitmap = bitmap
        self.hashCount = hashCount
        bitCount = bitmap.count * 8 - padding
    }

    /// From the `unchangedNames` JSON: `{"bits":{"bitmap":base64,"padding":n},"hashCount":k}`.
    /// nil when absent, malformed or empty — every case the SDK treats as "no filter".
    init?(json: JSON?) {
        guard let json, let bits = json["bits"] else { return nil }
        let text = bits["bitmap"]?.stringValue ?? ""
        guard let data = Data(base64Encoded: text) else { return nil }
        let padding = bits.member("padding")?.integerLike ?? 0
        let hashCount = json.member("hashCount")?.integerLike ?? 0
        guard let filter = BloomFilter(bitmap: [UInt8](data), padding: Int(padding), hashCount: Int(hashCount)), filter.bitCount > 0 else {
            return nil
        }
        self = filter
    }

    func mightContain(_ value: String) -> Bool {
        guard bitCount > 0 else { return false }
        let hash = MD5.digest(Array(value.utf8))
        var h1: UInt64 = 0, h2: UInt64 = 0
        for i in 0..<8 {
            h1 |= UInt64(hash[i]) << (8 * UInt64(i))
            h2 |= UInt64(hash[8 + i]) << (8 * UInt64(i))
        }
        let count = UInt64(bitCount)
        for i in 0..<UInt64(hashCount) {
            let index = Int((h1 &+ i &* h2) % count)
            if bitmap[index / 8] & (1 << UInt8(index % 8)) == 0 { return false }
        }
        return true
    }
}
