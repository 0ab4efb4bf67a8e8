import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A minimal HTTP/1.1 client over a blocking socket that exposes a streaming response as it
/// arrives, so tests can read Server-Sent Events one by one (HummingbirdTesting's clients only
/// hand back complete bodies). Reads run on a GCD thread, never on the cooperative pool.
final class RawHTTPStream: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible { let description: String }

    private let fd: Int32
    private let lock = NSLock()
    private var received: [UInt8] = []
    private var closedByPeer = false

    convenience init(port: Int, method: String = "GET", path: String, headers: [String] = [], body: String? = nil) throws {
        var request = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\n"
        for header in headers { request += header + "\r\n" }
        if let body { request += "Content-Length: \(body.utf8.count)\r\n" }
        request += "\r\n" + (body ?? "")
        try self.init(port: port, raw: request)
    }

    /// Connects and sends `raw` as it is (several requests, a partial one…).
    init(port: Int, raw: String) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw Failure(description: "connect() failed: \(errno)")
        }
        try send(raw)
    }

    /// Sends more bytes on the connection.
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send() failed") }
            sent += n
        }
    }

    deinit { Glibc.close(fd) }

    /// Closes our end, as a client going away does.
    func disconnect() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Ends our sending side only, still reading what comes.
    func halfClose() { shutdown(fd, Int32(SHUT_WR)) }

    /// Everything received so far, as text.
    var rawText: String { lock.withLock { String(decoding: received, as: UTF8.self) } }

    /// The response head (status line and headers) once complete.
    var head: String? {
        lock.withLock {
            guard let end = RawHTTPStream.find([13, 10, 13, 10], in: received) else { return nil }
            return String(decoding: received[..<end], as: UTF8.self)
        }
    }

    /// The body so far, de-chunked when the response is chunked; `ended` once the last chunk came.
    var body: (text: String, ended: Bool) {
        lock.withLock {
            guard let end = RawHTTPStream.find([13, 10, 13, 10], in: received) else { return ("", false) }
            let headText = String(decoding: received[..<end], as: UTF8.self).lowercased()
            var rest = Array(received[(end + 4)...])
            guard headText.contains("transfer-encoding: chunked") else { return (String(decoding: rest, as: UTF8.self), closedByPeer) }
            var out: [UInt8] = []
            while let lineEnd = RawHTTPStream.find([13, 10], in: rest) {
                let sizeText = String(decoding: rest[..<lineEnd], as: UTF8.self).split(separator: ";").first.map(String.init) ?? ""
                guard let size = Int(sizeText, radix: 16) else { break }
                if size == 0 { return (String(decoding: out, as: UTF8.self), true) }
                guard rest.count >= lineEnd + 2 + size + 2 else { break }
                out += rest[(lineEnd + 2)..<(lineEnd + 2 + size)]
                rest = Array(rest[(lineEnd + 2 + size + 2)...])
            }
            return (String(decoding: out, as: UTF8.self), closedByPeer)
        }
    }

    /// The complete `Content-Length` responses received so far, in order.
    var responses: [(head: String, body: String)] {
        lock.withLock {
            var result: [(head: String, body: String)] = []
            var rest = received[...]
            while let end = RawHTTPStream.find([13, 10, 13, 10], in: Array(rest)) {
                let head = String(decoding: rest.prefix(end), as: UTF8.self)
                let length = head.lowercased().components(separatedBy: "\r\n")
                    .first { $0.hasPrefix("content-length:") }
                    .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
                let bodyStart = rest.startIndex + end + 4
                guard rest.endIndex - bodyStart >= length else { break }
                result.append((head, String(decoding: rest[bodyStart..<(bodyStart + length)], as: UTF8.self)))
                rest = rest[(bodyStart + length)...]
            }
            return result
        }
    }

    /// The complete SSE events so far (`event`/`id`/`data` blocks and comments), in order.
    var events: [[String]] {
        body.text.components(separatedBy: "\n\n").dropLast().map { $0.components(separatedBy: "\n") }
    }

    /// Reads until `condition` holds or `timeout` passes (then returns false).
    func read(timeout: Double = 10, until condition: @escaping @Sendable (RawHTTPStream) -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                let deadline = Date().addingTimeInterval(timeout)
                var buffer = [UInt8](repeating: 0, count: 65536)
                while !condition(self) {
                    let remaining = deadline.timeIntervalSinceNow
                    if remaining <= 0 || self.lock.withLock({ self.closedByPeer }) {
                        continuation.resume(returning: condition(self))
                        return
                    }
                    var poller = pollfd(fd: self.fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&poller, 1, Int32(min(remaining, 1) * 1000)) > 0 else { continue }
                    let n = recv(self.fd, &buffer, buffer.count, 0)
                    self.lock.withLock {
                        if n > 0 { self.received += buffer[..<n] } else { self.closedByPeer = true }
                    }
                }
                continuation.resume(returning: true)
            }
        }
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
        return nil
    }
}

/// One parsed SSE event: its name, id and data (JSON when it parses).
struct SSEEvent {
    let name: String?
    let id: String?
    let data: String?
    let isComment: Bool

    init(_ lines: [String]) {
        var name: String?, id: String?, data: String?
        for line in lines {
            if line.hasPrefix("event: ") { name = String(line.dropFirst(7)) }
            if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
            if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
        }
        self.name = name
        self.id = id
        self.data = data
        isComment = lines.allSatisfy { $0.hasPrefix(":") }
    }
}
