import FiregateModel
import Foundation
import NIOCore

/// The request that opens a Realtime Database socket: `GET /.ws?v=5&ns=<namespace>…` with a
/// WebSocket upgrade (RFC 6455), read straight from the connection's bytes by the fast path.
/// Only the head matters; the client sends nothing more before the server's answer.
struct RealtimeUpgradeRequest {
    /// The request's length in the buffer (head and blank line).
    let length: Int
    let parameters: [String: String]
    /// Header values by lower-cased name (the last of a repeated header).
    let headers: [String: String]

    enum Parse {
        case incomplete
        /// Not a request for `/.ws`: the other paths take it.
        case other
        case request(RealtimeUpgradeRequest)
    }

    static let path = "/.ws"
    private static let opening = Array("GET /.ws".utf8)

    /// Whether a connection's first bytes open a socket (true), cannot (false) or cannot tell
    /// yet (nil).
    static func opens(_ bytes: ByteBufferView) -> Bool? {
        for (offset, byte) in bytes.prefix(opening.count).enumerated() where byte != opening[offset] { return false }
        guard bytes.count > opening.count else { return nil }
        return [UInt8(ascii: " "), UInt8(ascii: "?"), UInt8(ascii: "/")].contains(bytes[bytes.startIndex + opening.count])
    }

    static func parse(_ buffer: ByteBuffer) -> Parse {
        switch opens(buffer.readableBytesView) {
        case nil: return .incomplete
        case false?: return .other
        case true?: break
        }
        let view = buffer.readableBytesView
        guard let end = headEnd(view) else {
            return view.count > SimpleRequest.maxHeadLength ? .other : .incomplete
        }
        let head = String(decoding: view.prefix(end), as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3, requestLine[2] == "HTTP/1.1" else { return .other }
        let target = requestLine[1]
        var parameters: [String: String] = [:]
        if let question = target.firstIndex(of: "?") {
            for pair in target[target.index(after: question)...].split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0])
                let value = parts.count > 1 ? String(parts[1]) : ""
                parameters[name] = (try? PercentDecoding.decode(value)) ?? value
            }
        }
        var headers: [String: String] = [:]
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return .request(RealtimeUpgradeRequest(length: end + 4, parameters: parameters, headers: headers))
    }

    /// Where the blank line that ends the head starts.
    private static func headEnd(_ view: ByteBufferView) -> Int? {
        let bytes = Array(view.prefix(SimpleRequest.maxHeadLength + 4))
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// Why this request cannot become a WebSocket, if it cannot.
    var upgradeProblem: String? {
        guard headers["upgrade"]?.lowercased() == "websocket" else { return "/.ws is the Realtime Database's WebSocket endpoint: send an Upgrade: websocket request." }
        guard headers["connection"]?.lowercased().contains("upgrade") == true else { return "The upgrade needs Connection: Upgrade." }
        guard headers["sec-websocket-version"] == "13" else { return "Only WebSocket version 13 is spoken." }
        guard let key = headers["sec-websocket-key"], Data(base64Encoded: key)?.count == 16 else { return "Sec-WebSocket-Key must be 16 bytes in base64." }
        return nil
    }

    /// RFC 6455's proof that the server read the key.
    var acceptValue: String {
        let text = (headers["sec-websocket-key"] ?? "") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
        return Data(SHA1.hash(Array(text.utf8))).base64EncodedString()
    }

    /// The namespace: `ns=`, else the server's default.
    func namespace(default name: String) -> String { parameters["ns"] ?? name }
}
