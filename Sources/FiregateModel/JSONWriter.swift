import Foundation

/// Serialises `JSON` to UTF-8. Numbers print the way JavaScript prints them, which both
/// wire formats (Firestore REST doubles, RTDB values) follow.
public struct JSONWriter {
    public enum Style: Sendable { case compact, pretty }

    public static func bytes(_ value: JSON, style: Style = .compact) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(value, into: &out, style: style, indent: 0)
        return out
    }

    public static func string(_ value: JSON, style: Style = .compact) -> String {
        String(decoding: bytes(value, style: style), as: UTF8.self)
    }

    public static func write(_ value: JSON, into out: inout [UInt8], style: Style = .compact, indent: Int = 0) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d): out.append(contentsOf: formatNumber(d).utf8)
        case .string(let s): writeString(s, into: &out)
        case .array(let items):
            if items.isEmpty { out.append(contentsOf: "[]".utf8); return }
            out.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                if style == .pretty { newline(&out, indent + 1) }
                write(item, into: &out, style: style, indent: indent + 1)
            }
            if style == .pretty { newline(&out, indent) }
            out.append(UInt8(ascii: "]"))
        case .object(let fields):
            if fields.isEmpty { out.append(contentsOf: "{}".utf8); return }
            out.append(UInt8(ascii: "{"))
            var first = true
            for (key, item) in fields {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                if style == .pretty { newline(&out, indent + 1) }
                writeString(key, into: &out)
                // Production RTDB pretty-prints `"key" : value`.
                out.append(contentsOf: (style == .pretty ? " : " : ":").utf8)
                write(item, into: &out, style: style, indent: indent + 1)
            }
            if style == .pretty { newline(&out, indent) }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func newline(_ out: inout [UInt8], _ indent: Int) {
        out.append(0x0A)
        for _ in 0..<indent { out.append(contentsOf: "  ".utf8) }
    }

    static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    public static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            // Runs that need no escape are copied whole; most strings are one such run.
            var runStart = 0
            for i in bytes.indices {
                let byte = bytes[i]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0x7F else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                writeEscape(byte, into: &out)
                runStart = i + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func writeEscape(_ byte: UInt8, into out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
        case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
        case 0x0A: out.append(contentsOf: "\\n".utf8)
        case 0x0D: out.append(contentsOf: "\\r".utf8)
        case 0x09: out.append(contentsOf: "\\t".utf8)
        case 0x08: out.append(contentsOf: "\\b".utf8)
        case 0x0C: out.append(contentsOf: "\\f".utf8)
        default:
            out.append(contentsOf: "\\u00".utf8)
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0xF)])
        }
    }

    /// JavaScript's Number#toString for finite values: integers without a fraction up to 1e21,
    /// otherwise the shortest round-tripping form with JS exponent notation.
    public static func formatNumber(_ d: Double) -> String {
        if d.isNaN { return "\"NaN\"" }
        if d.isInfinite { return d < 0 ? "\"-Infinity\"" : "\"Infinity\"" }
        if d == 0 { return "0" }
        if d == d.rounded(), abs(d) < 1e21 {
            if abs(d) < 9.2e18 { return String(Int64(d)) }
        }
        let abs = Swift.abs(d)
        var text = "\(d)"  // Swift prints the shortest round-trip representation.
        // JS switches to exponent form below 1e-6 (Number::toString: decimal exponent n > -6).
        if abs >= 1e-6 && abs < 1e21 {
            if text.contains("e") {
                // Expand exponent form (e.g. 1e-05 → 0.00001) as JS does in this range.
                text = expandExponent(text)
            }
            if text.hasSuffix(".0") { text.removeLast(2) }
            return text
        }
        // JS style exponent: 1e+21, 1.5e-8
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            var mantissa = String(text[..<e])
            var exponent = String(text[text.index(after: e)...])
            if mantissa.hasSuffix(".0") { mantissa.removeLast(2) }
            if !exponent.hasPrefix("-") && !exponent.hasPrefix("+") { exponent = "+" + exponent }
            exponent = exponent.replacingOccurrences(of: "+0", with: "+").replacingOccurrences(of: "-0", with: "-")
            return mantissa + "e" + exponent
        }
        return text
    }

    static func expandExponent(_ text: String) -> String {
        guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) else { return text }
        let mantissa = String(text[..<e])
        guard let exponent = Int(text[text.index(after: e)...]) else { return text }
        let negative = mantissa.hasPrefix("-")
        let digitsPart = negative ? String(mantissa.dropFirst()) : mantissa
        let parts = digitsPart.split(separator: ".", omittingEmptySubsequences: false)
        let intPart = String(parts[0])
        let fracPart = parts.count > 1 ? String(parts[1]) : ""
        var digits = intPart + fracPart
        var point = intPart.count + exponent
        if point <= 0 {
            digits = String(repeating: "0", count: -point + 1) + digits
            point = 1
        } else if point > digits.count {
            digits += String(repeating: "0", count: point - digits.count)
        }
        let idx = digits.index(digits.startIndex, offsetBy: point)
        var result = String(digits[..<idx])
        var frac = String(digits[idx...])
        while frac.hasSuffix("0") { frac.removeLast() }
        if !frac.isEmpty { result += "." + frac }
        return (negative ? "-" : "") + result
    }
}
