/// Firestore's total order over values, and the equality queries use (3 == 3.0, NaN == NaN).
extension Value {
    public static func compare(_ a: Value, _ b: Value) -> Int {
        let ta = a.typeOrder, tb = b.typeOrder
        if ta != tb { return ta < tb ? -1 : 1 }
        switch (a, b) {
        case (.null, .null): return 0
        case (.boolean(let x), .boolean(let y)): return x == y ? 0 : (x ? 1 : -1)
        case (.integer, _), (.double, _), (.map, .integer), (.map, .double): return compareNumbers(a.bsonNumber ?? a, b.bsonNumber ?? b)
        case (.timestamp(let x), .timestamp(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.serverTimestamp(let x, _), .serverTimestamp(let y, _)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.string(let x), .string(let y)): return compareUTF8(x, y)
        case (.bytes(let x), .bytes(let y)): return compareBytes(x, y)
        case (.reference(let x), .reference(let y)): return compareReferences(x, y)
        case (.geoPoint(let la, let lo), .geoPoint(let lb, let lob)):
            let c = compareDoubles(la, lb)
            return c != 0 ? c : compareDoubles(lo, lob)
        case (.array(let x), .array(let y)): return compareArrays(x, y)
        case (.map(let x), .map(let y)):
            if Value.isVector(x) { return compareVectors(x, y) }
            switch BSONKind(x) {
            case .int32?, .decimal128?: return compareNumbers(a.bsonNumber ?? a, b.bsonNumber ?? b)
            case .minKey?, .maxKey?: return 0
            case .timestamp?, .regex?:
                // Their inner maps order as {increment, seconds} / {options, pattern}: seconds and
                // pattern come first.
                guard case .map(let ix)? = x.first?.value, case .map(let iy)? = y.first?.value else { return 0 }
                let (major, minor) = BSONKind(x) == .timestamp ? ("seconds", "increment") : ("pattern", "options")
                let c = compare(ix[major] ?? .null, iy[major] ?? .null)
                return c != 0 ? c : compare(ix[minor] ?? .null, iy[minor] ?? .null)
            case .objectID?, .binary?: return compare(x.first!.value, y.first!.value)
            case nil: return compareMaps(x, y)
            }
        default: return 0
        }
    }

    /// An Int32 or Decimal128 as the number it sorts as.
    var bsonNumber: Value? {
        guard case .map(let fields) = self, let kind = BSONKind(fields), kind == .int32 || kind == .decimal128 else { return nil }
        return BSONKind.number(fields)
    }

    /// Equality as queries and array transforms use it.
    public static func equals(_ a: Value, _ b: Value) -> Bool {
        compare(a, b) == 0
    }

    static func compareNumbers(_ a: Value, _ b: Value) -> Int {
        switch (a, b) {
        case (.integer(let x), .integer(let y)): return x == y ? 0 : (x < y ? -1 : 1)
        case (.double(let x), .double(let y)): return compareDoubles(x, y)
        case (.integer(let x), .double(let y)): return -compareDoubleToInt(y, x)
        case (.double(let x), .integer(let y)): return compareDoubleToInt(x, y)
        default: return 0
        }
    }

    /// NaN sorts before every other number; -0 equals 0.
    static func compareDoubles(_ x: Double, _ y: Double) -> Int {
        if x.isNaN { return y.isNaN ? 0 : -1 }
        if y.isNaN { return 1 }
        return x == y ? 0 : (x < y ? -1 : 1)
    }

    /// Exact comparison of a double with an int64 (no rounding of large integers).
    static func compareDoubleToInt(_ d: Double, _ i: Int64) -> Int {
        if d.isNaN { return -1 }
        if d < -9_223_372_036_854_775_808.0 { return -1 }
        if d >= 9_223_372_036_854_775_808.0 { return 1 }
        let truncated = Int64(d.rounded(.towardZero))
        if truncated != i { return truncated < i ? -1 : 1 }
        let fraction = d - d.rounded(.towardZero)
        return fraction == 0 ? 0 : (fraction < 0 ? -1 : 1)
    }

    public static func compareUTF8(_ x: String, _ y: String) -> Int {
        // Not `x == y`: Swift string equality is canonical equivalence ("e\u{301}" == "é"),
        // Firestore compares bytes.
        var ix = x.utf8.makeIterator(), iy = y.utf8.makeIterator()
        while true {
            switch (ix.next(), iy.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let a?, let b?): if a != b { return a < b ? -1 : 1 }
            }
        }
    }

    static func compareBytes(_ x: [UInt8], _ y: [UInt8]) -> Int {
        for (a, b) in zip(x, y) where a != b { return a < b ? -1 : 1 }
        return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
    }

    /// References compare segment by segment (document keys order).
    static func compareReferences(_ x: String, _ y: String) -> Int {
        let sx = x.split(separator: "/", omittingEmptySubsequences: false)
        let sy = y.split(separator: "/", omittingEmptySubsequences: false)
        for (a, b) in zip(sx, sy) {
            let c = ResourcePath.compareSegments(String(a), String(b))
            if c != 0 { return c }
        }
        return sx.count == sy.count ? 0 : (sx.count < sy.count ? -1 : 1)
    }

    static func compareArrays(_ x: [Value], _ y: [Value]) -> Int {
        for (a, b) in zip(x, y) {
            let c = compare(a, b)
            if c != 0 { return c }
        }
        return x.count == y.count ? 0 : (x.count < y.count ? -1 : 1)
    }

    static func compareMaps(_ x: [String: Value], _ y: [String: Value]) -> Int {
        let kx = x.keys.sorted { compareUTF8($0, $1) < 0 }
        let ky = y.keys.sorted { compareUTF8($0, $1) < 0 }
        for (a, b) in zip(kx, ky) {
            let c = compareUTF8(a, b)
            if c != 0 { return c }
            let v = compare(x[a]!, y[b]!)
            if v != 0 { return v }
        }
        return kx.count == ky.count ? 0 : (kx.count < ky.count ? -1 : 1)
    }

    /// Vectors order by length first, then element-wise.
    static func compareVectors(_ x: [String: Value], _ y: [String: Value]) -> Int {
        let ax = x["value"]?.arrayElements ?? [], ay = y["value"]?.arrayElements ?? []
        if ax.count != ay.count { return ax.count < ay.count ? -1 : 1 }
        return compareArrays(ax, ay)
    }
}
