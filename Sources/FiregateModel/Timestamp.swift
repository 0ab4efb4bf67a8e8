import Foundation

/// A point in time with nanosecond precision, as Firestore's google.protobuf.Timestamp.
public struct Timestamp: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var seconds: Int64
    public var nanos: Int32

    public init(seconds: Int64, nanos: Int32) {
        self.seconds = seconds
        self.nanos = nanos
    }

    public init(microseconds: Int64) {
        seconds = microseconds.floorDiv(1_000_000)
        nanos = Int32(microseconds.floorMod(1_000_000) * 1000)
    }

    public init(milliseconds: Int64) {
        self.init(microseconds: milliseconds * 1000)
    }

    public var microseconds: Int64 { seconds * 1_000_000 + Int64(nanos) / 1000 }
    public var milliseconds: Int64 { seconds * 1000 + Int64(nanos) / 1_000_000 }

    /// Truncated to microseconds, the precision Firestore stores.
    public var truncatedToMicroseconds: Timestamp { Timestamp(seconds: seconds, nanos: nanos / 1000 * 1000) }

    public static func < (a: Timestamp, b: Timestamp) -> Bool {
        (a.seconds, a.nanos) < (b.seconds, b.nanos)
    }

    /// Valid range of Firestore timestamps: 0001-01-01 to 9999-12-31.
    /// The epoch: the SDK's SnapshotVersion.min(), before any version watch sends.
    public static let zero = Timestamp(microseconds: 0)
    public static let minSeconds: Int64 = -62_135_596_800
    public static let maxSeconds: Int64 = 253_402_300_799

    public var description: String { rfc3339 }

    /// RFC 3339 in UTC with 0, 3, 6 or 9 fraction digits, as proto3 JSON prints it. Formatted
    /// digit by digit: it is on the hot path of every document encoding.
    public var rfc3339: String {
        let days = seconds.floorDiv(86_400)
        let secondOfDay = Int(seconds.floorMod(86_400))
        let (year, month, day) = Timestamp.civil(fromDays: days)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(30)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var v = value
            while divisor > 0 {
                bytes.append(UInt8(48 + v / divisor))
                v %= divisor
                divisor /= 10
            }
        }
        digits(year, 4); bytes.append(45); digits(month, 2); bytes.append(45); digits(day, 2)
        bytes.append(84)
        digits(secondOfDay / 3600, 2); bytes.append(58); digits(secondOfDay / 60 % 60, 2); bytes.append(58); digits(secondOfDay % 60, 2)
        if nanos != 0 {
            bytes.append(46)
            let n = Int(nanos)
            if n % 1_000_000 == 0 {
                digits(n / 1_000_000, 3)
            } else if n % 1000 == 0 {
                digits(n / 1000, 6)
            } else {
                digits(n, 9)
            }
        }
        bytes.append(90)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Parses RFC 3339 (`2024-01-02T03:04:05.123456789Z`, offsets allowed, 0–9 fraction digits).
    public init?(rfc3339 text: String) {
        let b = Array(text.utf8)
        func num(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= b.count else { return nil }
            var v = 0
            for i in from..<(from + count) {
                guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                v = v * 10 + Int(b[i] - 0x30)
            }
            return v
        }
        guard b.count >= 20, let year = num(0, 4), b[4] == 0x2D, let month = num(5, 2), b[7] == 0x2D, let day = num(8, 2),
              b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"), let hour = num(11, 2), b[13] == 0x3A,
              let minute = num(14, 2), b[16] == 0x3A, let second = num(17, 2)
        else { return nil }
        guard (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else { return nil }
        guard day <= Timestamp.daysIn(month: month, year: year) else { return nil }
        var i = 19
        var nanos = 0
        if i < b.count, b[i] == UInt8(ascii: ".") {
            i += 1
            var digits = 0
            while i < b.count, b[i] >= 0x30, b[i] <= 0x39 {
                guard digits < 9 else { return nil }
                nanos = nanos * 10 + Int(b[i] - 0x30)
                digits += 1
                i += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<9 { nanos *= 10 }
        }
        guard i < b.count else { return nil }
        var offset = 0
        if b[i] == UInt8(ascii: "Z") || b[i] == UInt8(ascii: "z") {
            i += 1
        } else if b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") {
            let sign = b[i] == UInt8(ascii: "+") ? 1 : -1
            guard let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == 0x3A, let om = num(i + 4, 2), oh < 24, om < 60 else { return nil }
            offset = sign * (oh * 3600 + om * 60)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = Timestamp.days(fromCivil: year, month, day)
        let secs = Int64(days) * 86_400 + Int64(hour * 3600 + minute * 60 + second) - Int64(offset)
        guard secs >= Timestamp.minSeconds, secs <= Timestamp.maxSeconds else { return nil }
        self.init(seconds: secs, nanos: Int32(nanos))
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    // Howard Hinnant's civil-date algorithms.
    static func days(fromCivil y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays z0: Int64) -> (Int, Int, Int) {
        let z = Int(z0) + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp + (mp < 10 ? 3 : -9)
        return (m <= 2 ? y + 1 : y, m, d)
    }
}

extension Int64 {
    func floorDiv(_ d: Int64) -> Int64 { self >= 0 ? self / d : (self - d + 1) / d }
    func floorMod(_ d: Int64) -> Int64 { self - floorDiv(d) * d }
}
