/// A slash-separated path relative to a database's documents root: a collection when its
/// length is odd (`cities`), a document when even (`cities/SF`).
public struct ResourcePath: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let segments: [String]
    /// The segments' hash, computed once: a database's indexes hash every path on each insert
    /// and again on every resize, and hashing the strings each time dominated large commits.
    private let segmentsHash: Int

    public init(_ segments: [String]) {
        self.segments = segments
        self.segmentsHash = segments.hashValue
    }

    public static func == (a: ResourcePath, b: ResourcePath) -> Bool {
        a.segmentsHash == b.segmentsHash && a.segments == b.segments
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(segmentsHash) }

    public var isEmpty: Bool { segments.isEmpty }
    public var isDocument: Bool { !segments.isEmpty && segments.count % 2 == 0 }
    public var isCollection: Bool { segments.count % 2 == 1 }
    public var count: Int { segments.count }
    public var lastSegment: String { segments.last ?? "" }
    public var canonical: String { segments.joined(separator: "/") }
    public var description: String { canonical }

    /// The path without its last segment.
    public var parent: ResourcePath { ResourcePath(Array(segments.dropLast())) }

    public func appending(_ segment: String) -> ResourcePath { ResourcePath(segments + [segment]) }

    public func isPrefix(of other: ResourcePath) -> Bool {
        other.segments.count >= segments.count && Array(other.segments.prefix(segments.count)) == segments
    }

    /// Documents order by path segment by segment, each segment by UTF-8 bytes.
    public static func < (a: ResourcePath, b: ResourcePath) -> Bool { compare(a, b) < 0 }

    public static func compare(_ a: ResourcePath, _ b: ResourcePath) -> Int {
        for (x, y) in zip(a.segments, b.segments) {
            let c = compareSegments(x, y)
            if c != 0 { return c }
        }
        return a.segments.count == b.segments.count ? 0 : (a.segments.count < b.segments.count ? -1 : 1)
    }

    /// Numeric ids (`__id<int64>__`, what the Datastore-era APIs and the clients' lowest-id
    /// cursors use) sort before string ids and among themselves by number; the rest by UTF-8.
    static func compareSegments(_ x: String, _ y: String) -> Int {
        let xn = numericID(x), yn = numericID(y)
        switch (xn, yn) {
        case (nil, nil): return Value.compareUTF8(x, y)
        case (_?, nil): return -1
        case (nil, _?): return 1
        case (let a?, let b?): return a == b ? 0 : (a < b ? -1 : 1)
        }
    }

    /// The number of a `__id<int64>__` segment.
    static func numericID(_ segment: String) -> Int64? {
        guard segment.utf8.count > 6, segment.hasPrefix("__id"), segment.hasSuffix("__") else { return nil }
        return Int64(segment.dropFirst(4).dropLast(2))
    }

    /// Parses and validates `a/b/c`: no empty segments, ids within production's limits.
    public static func parse(_ text: String) throws(FiregateError) -> ResourcePath {
        if text.isEmpty { return ResourcePath([]) }
        let parts = segments(of: text)
        for part in parts {
            try validateSegment(part, in: text)
        }
        guard parts.count <= ResourcePath.maxSegments else {
            throw .invalidArgument("Document path \"\(text)\" is too deep: at most 100 levels of subcollections are allowed.")
        }
        return ResourcePath(parts)
    }

    /// `text` split at every `/`, empty segments kept. Splits the UTF-8 bytes, as Firestore
    /// does (and much faster than splitting characters: every write's name goes through here).
    public static func segments(of text: String) -> [String] {
        text.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).map { String(Substring($0)) }
    }

    /// 100 nested subcollections = 200 segments.
    public static let maxSegments = 200

    static func validateSegment(_ segment: String, in path: String) throws(FiregateError) {
        if segment.isEmpty {
            throw .invalidArgument("Invalid path \"\(path)\": segments must not be empty.")
        }
        if segment == "." || segment == ".." {
            throw .invalidArgument("Invalid path \"\(path)\": \"\(segment)\" is not a valid id.")
        }
        if segment.utf8.count > 1500 {
            throw .invalidArgument("Invalid path \"\(path)\": ids must be at most 1500 bytes.")
        }
        if segment.utf8.count >= 4, segment.hasPrefix("__"), segment.hasSuffix("__"), numericID(segment) == nil {
            throw .invalidArgument("Invalid path \"\(path)\": ids matching __.*__ are reserved.")
        }
    }

    /// Validates a single document or collection id (as in `?documentId=`).
    public static func validateID(_ id: String) throws(FiregateError) {
        if id.contains("/") { throw .invalidArgument("Document id \"\(id)\" must not contain \"/\".") }
        try validateSegment(id, in: id)
    }
}

/// The random ids Firestore assigns: 20 characters of [A-Za-z0-9].
public enum AutoID {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")

    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<20).map { _ in alphabet[Int(generator.next(upperBound: UInt64(alphabet.count)))] })
    }
}
