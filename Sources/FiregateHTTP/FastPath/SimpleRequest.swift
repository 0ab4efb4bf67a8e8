import Foundation
import NIOCore

/// A request the fast path may answer, read straight from the connection's bytes: exactly
/// `GET <target> HTTP/1.1` (or `POST` with a `Content-Length` body of at most 64 KiB, all of
/// it arrived), a target of visible ASCII, and no header that changes framing, the connection,
/// the method or the kind of answer (`Transfer-Encoding`, a `Content-Length` on a GET, `Upgrade`,
/// `Expect`, `X-HTTP-Method-Override`, `If-Match`, `If-None-Match`, `X-Firebase-ETag`,
/// `Firegate-Forwarded-By`, `Firegate-Queued-Write`, a `Connection` other than `keep-alive`). Anything else is for the full HTTP/1.1 parser, so
/// the check errs on the side of refusing. An `Accept` naming event streams, a
/// `Last-Event-ID` and an `Origin` (with their values) are noted, for the answer to decide.
struct SimpleRequest {
    enum Method { case get, post }

    let method: Method
    /// Where the target's path lies in the buffer, relative to its reader index.
    let path: Range<Int>
    /// Where the query lies (after the `?`), when there is one.
    let query: Range<Int>?
    /// The whole request: head, terminating blank line and body.
    let length: Int
    /// Where a POST's body lies (empty for a GET).
    var body: Range<Int> { (length - bodyLength)..<length }
    var bodyLength = 0
    let acceptsGzip: Bool
    /// `Accept` names `text/event-stream`: only a stream answers it here.
    var acceptsEventStream = false
    /// The `Last-Event-ID` header's value, when one came: a stream resuming after that event.
    /// More than one is left to the full path.
    var lastEventID: String?
    var resumes: Bool { lastEventID != nil }
    /// The `Authorization` header's value: who opens a stream, judged again if rules change.
    var authorization: String?
    /// The `Origin` header's value: a page's request, answered here only by a route that writes
    /// the CORS headers `CrossOrigin` would (`FastRoute.answersPages`).
    var origin: String?

    enum Parse {
        case simple(SimpleRequest)
        /// The head has not fully arrived yet (and is still short enough to wait for).
        case incomplete
        case notSimple
    }

    /// Longest head the fast path waits for.
    static let maxHeadLength = 8 * 1024
    /// Longest POST body the fast path waits for.
    static let maxBodyLength = 64 * 1024

    static func parse(_ buffer: ByteBuffer) -> Parse {
        buffer.withUnsafeReadableBytes { bytes in parse(bytes) }
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> Parse {
        let count = bytes.count
        guard count > 0 else { return .incomplete }
        let method: Method = bytes[0] == UInt8(ascii: "P") ? .post : .get
        let prefix: StaticString = method == .get ? "GET /" : "POST /"
        let prefixLength = prefix.utf8CodeUnitCount
        for i in 0..<min(prefixLength, count) where bytes[i] != prefix.utf8Start[i] { return .notSimple }
        guard count > prefixLength else { return .incomplete }
        // The target runs from the "/" to the next space.
        let targetStart = prefixLength - 1
        var i = targetStart
        var questionMark: Int?
        while i < count, bytes[i] != UInt8(ascii: " ") {
            let byte = bytes[i]
            guard byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "#") else { return .notSimple }
            if byte == UInt8(ascii: "?"), questionMark == nil { questionMark = i }
            i += 1
        }
        let path = targetStart..<(questionMark ?? i)
        let query = questionMark.map { ($0 + 1)..<i }
        let version: StaticString = " HTTP/1.1\r\n"
        for j in 0..<version.utf8CodeUnitCount {
            guard i + j < count else { return i + j > maxHeadLength ? .notSimple : .incomplete }
            guard bytes[i + j] == version.utf8Start[j] else { return .notSimple }
        }
        i += version.utf8CodeUnitCount
        var acceptsGzip = false, acceptsEventStream = false, lastEventID: String?, authorization: String?, origin: String?
        var contentLength: Int?
        // Header lines, up to the blank line.
        while true {
            let end: Int
            switch lineEnd(bytes, from: i) {
            case .found(let index): end = index
            case .incomplete: return count > maxHeadLength ? .notSimple : .incomplete
            case .invalid: return .notSimple
            }
            if end == i {
                let bodyLength = contentLength ?? 0
                guard (method == .post) == (contentLength != nil) else { return .notSimple }
                guard count >= end + 2 + bodyLength else { return .incomplete }
                return .simple(SimpleRequest(method: method, path: path, query: query, length: end + 2 + bodyLength, bodyLength: bodyLength,
                                             acceptsGzip: acceptsGzip, acceptsEventStream: acceptsEventStream, lastEventID: lastEventID,
                                             authorization: authorization, origin: origin))
            }
            let first = bytes[i]
            guard first != UInt8(ascii: " "), first != UInt8(ascii: "\t") else { return .notSimple }  // obsolete line folding
            var colon = i
            while colon < end, bytes[colon] != UInt8(ascii: ":") {
                guard isTokenByte(bytes[colon]) else { return .notSimple }
                colon += 1
            }
            guard colon < end, colon > i else { return .notSimple }
            switch headerName(bytes, i..<colon) {
            case .refused: return .notSimple
            case .acceptEncoding: acceptsGzip = acceptsGzip || containsGzip(bytes, colon + 1..<end)
            case .connection: guard value(bytes, colon + 1..<end).lowercased() == "keep-alive" else { return .notSimple }
            case .accept: acceptsEventStream = acceptsEventStream || value(bytes, colon + 1..<end).lowercased().contains("event-stream")
            case .lastEventID:
                guard lastEventID == nil else { return .notSimple }
                lastEventID = value(bytes, colon + 1..<end)
            case .authorization:
                guard authorization == nil else { return .notSimple }
                authorization = value(bytes, colon + 1..<end)
            case .origin:
                guard origin == nil else { return .notSimple }
                origin = value(bytes, colon + 1..<end)
            case .contentLength:
                guard contentLength == nil, let length = decimal(bytes, colon + 1..<end), length <= maxBodyLength else { return .notSimple }
                contentLength = length
            case .other: break
            }
            i = end + 2
            guard i <= maxHeadLength else { return .notSimple }
        }
    }

    private enum LineEnd { case found(Int), incomplete, invalid }

    /// The index of the CR of the next CRLF from `start`. A bare CR or LF, or a NUL, is left
    /// to the full parser.
    private static func lineEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> LineEnd {
        var i = start
        while i < bytes.count {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\r") {
                guard i + 1 < bytes.count else { return .incomplete }
                return bytes[i + 1] == UInt8(ascii: "\n") ? .found(i) : .invalid
            }
            if byte == UInt8(ascii: "\n") || byte == 0 { return .invalid }
            i += 1
        }
        return .incomplete
    }

    private enum HeaderKind { case refused, acceptEncoding, connection, accept, lastEventID, authorization, contentLength, origin, other }

    /// A request between replicas goes to the full path too: it checks the cluster secret, marks
    /// the answer with the log position and commits a queued write once.
    private static let refusedNames = ["transfer-encoding", "upgrade", "expect", "x-http-method-override",
                                       "if-match", "if-none-match", "x-firebase-etag", "firegate-forwarded-by", "firegate-queued-write"]

    private static func headerName(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> HeaderKind {
        func equals(_ name: String) -> Bool {
            guard name.utf8.count == range.count else { return false }
            return zip(name.utf8, range).allSatisfy { $0 == lowercased(bytes[$1]) }
        }
        if refusedNames.contains(where: equals) { return .refused }
        // `Connection: keep-alive` is HTTP/1.1's default said out loud (Python's requests sends it).
        if equals("connection") { return .connection }
        if equals("accept") { return .accept }
        if equals("last-event-id") { return .lastEventID }
        if equals("authorization") { return .authorization }
        if equals("content-length") { return .contentLength }
        if equals("origin") { return .origin }
        return equals("accept-encoding") ? .acceptEncoding : .other
    }

    /// A header value of 1 to 6 decimal digits between optional blanks.
    private static func decimal(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Int? {
        var result = 0, digits = 0, trailing = false
        for i in range {
            let byte = bytes[i]
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                if digits > 0 { trailing = true }
                continue
            }
            guard !trailing, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), digits < 6 else { return nil }
            result = result * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
        }
        return digits > 0 ? result : nil
    }

    /// A header's value without surrounding blanks.
    private static func value(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> String {
        // Blanks around a header value are not part of it (trimmed here without Foundation's
        // bridging, which cost more than the rest of the request).
        var lower = range.lowerBound, upper = range.upperBound
        while lower < upper, bytes[lower] == UInt8(ascii: " ") || bytes[lower] == UInt8(ascii: "\t") { lower += 1 }
        while upper > lower, bytes[upper - 1] == UInt8(ascii: " ") || bytes[upper - 1] == UInt8(ascii: "\t") { upper -= 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[lower..<upper]), as: UTF8.self)
    }

    /// Whether an `Accept-Encoding` value names gzip (or `*`); a `q=0` is read as acceptance,
    /// which only sends the request the full way.
    private static func containsGzip(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Bool {
        let text = value(bytes, range).lowercased()
        return text.contains("gzip") || text.contains("*")
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 32 : byte
    }

    /// RFC 9110 token characters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
