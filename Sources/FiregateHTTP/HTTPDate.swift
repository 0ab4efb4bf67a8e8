#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `Date` header's value (RFC 9110 IMF-fixdate) for answers written below Hummingbird
/// (which stamps its own).
enum HTTPDate {
    /// Seconds since 1970 on the wall clock.
    static func currentSecond() -> Int {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int(spec.tv_sec)
    }

    static func format(_ second: Int) -> String {
        var time = time_t(second)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
