/// The order of keys in a tree: keys that read as 32-bit integers first, numerically (equal
/// values, such as `7` and `007`, shorter first), then every other key by UTF-16 code units,
/// as JavaScript compares strings.
public enum TreeKeyOrder {
    /// The key's integer value when it counts as an integer key: optional `-`, then 1 to 10
    /// digits after any leading zeros, within the 32-bit range.
    public static func integerValue(_ key: String) -> Int64? {
        var utf8 = Substring(key).utf8[...]
        var negative = false
        if utf8.first == UInt8(ascii: "-") {
            negative = true
            utf8 = utf8.dropFirst()
        }
        guard !utf8.isEmpty else { return nil }
        // Leading zeros are free; 1–10 further digits (the last zero counts when all are zeros).
        var significant = utf8.drop(while: { $0 == UInt8(ascii: "0") })
        if significant.isEmpty { significant = utf8.suffix(1) }
        guard significant.count <= 10 else { return nil }
        var value: Int64 = 0
        for byte in utf8 {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int64(byte - 0x30)
            if value > 1 << 32 { return nil }
        }
        if negative { value = -value }
        guard value >= Int64(Int32.min), value <= Int64(Int32.max) else { return nil }
        return value
    }

    /// -1, 0 or 1 as `a` sorts before, with, or after `b`.
    public static func compare(_ a: String, _ b: String) -> Int {
        if a == b { return 0 }
        let ai = integerValue(a)
        let bi = integerValue(b)
        switch (ai, bi) {
        case let (x?, y?):
            if x != y { return x < y ? -1 : 1 }
            let (la, lb) = (a.utf8.count, b.utf8.count)
            return la == lb ? compareText(a, b) : (la < lb ? -1 : 1)
        case (.some, nil): return -1
        case (nil, .some): return 1
        case (nil, nil): return compareText(a, b)
        }
    }

    public static func less(_ a: String, _ b: String) -> Bool { compare(a, b) < 0 }

    /// JavaScript string comparison: lexicographic over UTF-16 code units.
    public static func compareText(_ a: String, _ b: String) -> Int {
        var ia = a.utf16.makeIterator()
        var ib = b.utf16.makeIterator()
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case let (x?, y?):
                if x != y { return x < y ? -1 : 1 }
            }
        }
    }
}
