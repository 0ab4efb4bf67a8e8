/// A path to a field inside a document: `a.b.c`, with backtick-quoted segments for names
/// that are not simple identifiers (`` a.`x.y` ``). `__name__` names the document itself.
public struct FieldPath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let segments: [String]

    public init(_ segments: [String]) { self.segments = segments }

    public static let documentID = FieldPath(["__name__"])
    public var isDocumentID: Bool { segments == ["__name__"] }

    public var description: String { canonical }

    /// The canonical string, quoting segments that are not `[a-zA-Z_][a-zA-Z_0-9]*`.
    public var canonical: String {
        segments.map { segment in
            if FieldPath.isSimple(segment) { return segment }
            let escaped = segment.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "`", with: "\\`")
            return "`\(escaped)`"
        }.joined(separator: ".")
    }

    static func isSimple(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic) else { return false }
        return s.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }

    public static func < (a: FieldPath, b: FieldPath) -> Bool {
        for (x, y) in zip(a.segments, b.segments) {
            let c = Value.compareUTF8(x, y)
            if c != 0 { return c < 0 }
        }
        return a.segments.count < b.segments.count
    }

    public func isPrefix(of other: FieldPath) -> Bool {
        other.segments.count >= segments.count && Array(other.segments.prefix(segments.count)) == segments
    }

    /// Parses the server-side field path syntax (dots, backticks, backslash escapes).
    public static func parse(_ text: String) throws(FiregateError) -> FieldPath {
        var segments: [String] = []
        var current = ""
        var quoted = false
        var wasQuoted = false
        var iterator = text.makeIterator()
        while let ch = iterator.next() {
            if quoted {
                if ch == "\\" {
                    guard let next = iterator.next() else { throw .invalidArgument("Invalid field path \"\(text)\": trailing escape.") }
                    current.append(next)
                } else if ch == "`" {
                    quoted = false
                } else {
                    current.append(ch)
                }
            } else if ch == "`" {
                guard current.isEmpty else { throw .invalidArgument("Invalid field path \"\(text)\".") }
                quoted = true
                wasQuoted = true
            } else if ch == "." {
                guard !current.isEmpty || wasQuoted else { throw .invalidArgument("Invalid field path \"\(text)\": empty segment.") }
                segments.append(current)
                current = ""
                wasQuoted = false
            } else {
                guard !wasQuoted else { throw .invalidArgument("Invalid field path \"\(text)\".") }
                current.append(ch)
            }
        }
        guard !quoted else { throw .invalidArgument("Invalid field path \"\(text)\": unterminated backtick.") }
        guard !current.isEmpty || wasQuoted else { throw .invalidArgument("Invalid field path \"\(text)\": empty segment.") }
        segments.append(current)
        guard text.utf8.count <= 1500 else { throw .invalidArgument("Field path \"\(text.prefix(40))…\" is longer than 1500 bytes.") }
        return FieldPath(segments)
    }

    /// Parses a path whose fields a write sets: `__name__`-style reserved names are refused.
    public static func parseWritable(_ text: String) throws(FiregateError) -> FieldPath {
        let path = try parse(text)
        for segment in path.segments where FieldPath.isReserved(segment) {
            throw .invalidArgument("Field name \"\(segment)\" is reserved: names matching __.*__ cannot be written.")
        }
        return path
    }

    static func isReserved(_ name: String) -> Bool {
        name.count >= 4 && name.hasPrefix("__") && name.hasSuffix("__")
    }
}

import Foundation
