import NIOCore

/// RFC 6455 framing for the Realtime Database's sockets, read and written in the socket's own
/// handler: one handler per socket instead of a decoder, an aggregator, an encoder and an error
/// handler each keeping state (idle sockets are many; docs/benchmarks.md).
///
/// The reader takes a client's frames (masked, as RFC 6455 §5.1 requires), joins fragmented
/// messages, answers nothing itself and keeps bytes only while a frame is incomplete.
struct WebSocketFrameReader {
    enum Event: Equatable {
        case text([UInt8])
        case binary
        case ping([UInt8])
        case pong
        case close
        /// The input breaks the protocol: close with this code and reason.
        case failure(code: UInt16, reason: String)
    }

    /// Close codes of RFC 6455 §7.4.1.
    enum Code {
        static let normal: UInt16 = 1000
        static let goingAway: UInt16 = 1001
        static let protocolError: UInt16 = 1002
        static let unacceptableData: UInt16 = 1003
        static let tooBig: UInt16 = 1009
    }

    let maxMessageBytes: Int
    /// An incomplete frame's bytes, until the rest arrives.
    private var pending: ByteBuffer?
    /// A fragmented text message's pieces so far.
    private var fragments: [UInt8]?
    private var failed = false

    init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// Reads what arrived, calling `event` for each whole frame (message) in order.
    mutating func read(_ incoming: ByteBuffer, _ event: (Event) -> Void) {
        guard !failed else { return }
        var buffer: ByteBuffer
        if var earlier = pending {
            var incoming = incoming
            earlier.writeBuffer(&incoming)
            buffer = earlier
            pending = nil
        } else {
            buffer = incoming
        }
        while buffer.readableBytes > 0 {
            switch nextFrame(&buffer) {
            case .incomplete:
                pending = buffer.readableBytes > 0 ? buffer : nil
                return
            case .event(let next):
                if case .failure = next { failed = true }
                event(next)
                if failed { return }
            case .nothing:
                break
            }
        }
    }

    private enum Step { case incomplete, event(Event), nothing }

    private mutating func nextFrame(_ buffer: inout ByteBuffer) -> Step {
        let start = buffer.readerIndex
        guard let first = buffer.getInteger(at: start, as: UInt8.self), let second = buffer.getInteger(at: start + 1, as: UInt8.self) else {
            return .incomplete
        }
        let fin = first & 0x80 != 0
        let opcode = first & 0x0F
        guard first & 0x70 == 0 else { return fail(Code.protocolError, "Reserved bits are set: no extension was agreed.") }
        guard second & 0x80 != 0 else { return fail(Code.protocolError, "A client's frames must be masked (RFC 6455 §5.1).") }
        var length = Int(second & 0x7F)
        var offset = 2
        if length == 126 {
            guard let value = buffer.getInteger(at: start + 2, as: UInt16.self) else { return .incomplete }
            length = Int(value)
            offset = 4
        } else if length == 127 {
            guard let value = buffer.getInteger(at: start + 2, as: UInt64.self) else { return .incomplete }
            guard value <= UInt64(maxMessageBytes) else { return fail(Code.tooBig, "A message may have at most \(maxMessageBytes) bytes.") }
            length = Int(value)
            offset = 10
        }
        let isControl = opcode & 0x08 != 0
        if isControl {
            guard fin, length <= 125 else { return fail(Code.protocolError, "Control frames are whole and at most 125 bytes.") }
        }
        guard length + (fragments?.count ?? 0) <= maxMessageBytes else {
            return fail(Code.tooBig, "A message may have at most \(maxMessageBytes) bytes.")
        }
        guard buffer.readableBytes >= offset + 4 + length, let mask = buffer.getBytes(at: start + offset, length: 4),
              var payload = buffer.getBytes(at: start + offset + 4, length: length) else {
            return .incomplete
        }
        buffer.moveReaderIndex(forwardBy: offset + 4 + length)
        for i in payload.indices { payload[i] ^= mask[i & 3] }
        switch opcode {
        case 0x0:
            guard fragments != nil else { return fail(Code.protocolError, "A continuation frame with no message to continue.") }
            fragments!.append(contentsOf: payload)
            guard fin else { return .nothing }
            defer { fragments = nil }
            return .event(.text(fragments!))
        case 0x1:
            guard fragments == nil else { return fail(Code.protocolError, "A new message began before the last one ended.") }
            guard fin else {
                fragments = payload
                return .nothing
            }
            return .event(.text(payload))
        case 0x2: return .event(.binary)
        case 0x8: return .event(.close)
        case 0x9: return .event(.ping(payload))
        case 0xA: return .event(.pong)
        default: return fail(Code.protocolError, "Unknown opcode \(opcode).")
        }
    }

    private mutating func fail(_ code: UInt16, _ reason: String) -> Step {
        .event(.failure(code: code, reason: reason))
    }
}

/// Server frames: never masked, always whole.
enum WebSocketFrameWriter {
    static func text(_ payload: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        frame(opcode: 0x1, payload, allocator: allocator)
    }

    static func pong(_ payload: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        frame(opcode: 0xA, payload, allocator: allocator)
    }

    /// A close frame with `code` and as much of `reason` as fits (123 bytes, cut at a character).
    static func close(code: UInt16, reason: String, allocator: ByteBufferAllocator) -> ByteBuffer {
        var text = Array(reason.utf8.prefix(123))
        while String(validating: text, as: UTF8.self) == nil { text.removeLast() }
        return frame(opcode: 0x8, [UInt8(code >> 8), UInt8(code & 0xFF)] + text, allocator: allocator)
    }

    static func frame(opcode: UInt8, _ payload: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: payload.count + 10)
        buffer.writeInteger(0x80 | opcode, as: UInt8.self)
        if payload.count < 126 {
            buffer.writeInteger(UInt8(payload.count))
        } else if payload.count <= Int(UInt16.max) {
            buffer.writeInteger(126, as: UInt8.self)
            buffer.writeInteger(UInt16(payload.count))
        } else {
            buffer.writeInteger(127, as: UInt8.self)
            buffer.writeInteger(UInt64(payload.count))
        }
        buffer.writeBytes(payload)
        return buffer
    }
}
