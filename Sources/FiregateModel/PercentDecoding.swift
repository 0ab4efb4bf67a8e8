/// Percent-decoding of URL paths and query strings (`%28default%29` → `(default)`).
public enum PercentDecoding {
    /// Decodes `%XX` escapes; invalid escapes are kept literally. Throws INVALID_ARGUMENT when
    /// the decoded bytes are not UTF-8 (repairing them to U+FFFD would let different paths name
    /// the same key).
    public static func decode(_ text: String, plusAsSpace: Bool = false) throws(FiregateError) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            if b == UInt8(ascii: "%"), i + 2 < bytes.count, let hi = hexValue(bytes[i + 1]), let lo = hexValue(bytes[i + 2]) {
                out.append(hi << 4 | lo)
                i += 3
            } else if plusAsSpace, b == UInt8(ascii: "+") {
                out.append(0x20)
                i += 1
            } else {
                out.append(b)
                i += 1
            }
        }
        guard let decoded = String(validating: out, as: UTF8.self) else {
            throw .invalidArgument("Invalid percent-encoding in \"\(text)\": the decoded bytes are not valid UTF-8.")
        }
        return decoded
    }

    static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: b - 0x30
        case 0x41...0x46: b - 0x41 + 10
        case 0x61...0x66: b - 0x61 + 10
        default: nil
        }
    }
}
