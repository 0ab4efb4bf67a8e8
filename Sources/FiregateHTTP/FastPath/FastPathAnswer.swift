import HTTPTypes
import NIOCore
import NIOHTTP1

extension ConnectionFastPath {
    /// What the fast path answers with.
    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var body: [UInt8]
        var surface: Surface
        var method = "GET"
        /// The rules decisions it answers (`Firegate-Rules-Decision`).
        var decision: String?
    }
}

extension ConnectionFastPath.Answer {
    /// The whole response: the head the full path would send for this answer, then the body.
    func encoded(gzipped: Bool, date: String, replica: String?, allocator: ByteBufferAllocator) -> ByteBuffer {
        var out = allocator.buffer(capacity: body.count + 240)
        out.writeStaticString("HTTP/1.1 ")
        out.writeString("\(status.code) \(ConnectionFastPath.reasonPhrase(status))")
        out.writeStaticString("\r\nContent-Type: application/json; charset=utf-8\r\n")
        if surface == .tree {
            out.writeStaticString("Access-Control-Allow-Origin: *\r\n")
            if status == .ok { out.writeStaticString("Cache-Control: no-cache\r\n") }
        }
        if gzipped { out.writeStaticString("Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n") }
        if let decision {
            out.writeStaticString("Firegate-Rules-Decision: ")
            out.writeString(decision)
            out.writeStaticString("\r\n")
        }
        out.writeStaticString("Content-Length: ")
        out.writeString(String(body.count))
        out.writeStaticString("\r\nDate: ")
        out.writeString(date)
        out.writeStaticString("\r\nServer: ")
        out.writeString(FiregateServer.serverName)
        if let replica {
            out.writeStaticString("\r\nFiregate-Replica: ")
            out.writeString(replica)
        }
        out.writeStaticString("\r\n\r\n")
        out.writeBytes(body)
        return out
    }
}

extension ConnectionFastPath {
    static func reasonPhrase(_ status: HTTPResponse.Status) -> String {
        status.reasonPhrase.isEmpty ? HTTPResponseStatus(statusCode: status.code).reasonPhrase : status.reasonPhrase
    }
}
