/// The rules a Realtime Database key (one path segment or one object member name) must follow:
/// non-empty, at most 768 bytes of UTF-8, none of `. $ # [ ] /` and no ASCII control character.
public enum TreeKey {
    /// Longest key, in UTF-8 bytes.
    public static let maxBytes = 768
    /// Deepest location a value may be written to, counted in keys from the root.
    public static let maxDepth = 32

    /// Whether `key` may name a child.
    public static func isValid(_ key: String) -> Bool {
        var count = 0
        for byte in key.utf8 {
            count += 1
            switch byte {
            case 0x00...0x1F, 0x7F: return false
            case UInt8(ascii: "."), UInt8(ascii: "$"), UInt8(ascii: "#"), UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "/"):
                return false
            default: continue
            }
        }
        return count > 0 && count <= maxBytes
    }

    /// The pseudo-child holding a node's priority.
    public static let priority = ".priority"
    /// The member holding a leaf's value when the leaf also carries a priority.
    public static let value = ".value"
    /// The member marking a server value placeholder.
    public static let serverValue = ".sv"
}
