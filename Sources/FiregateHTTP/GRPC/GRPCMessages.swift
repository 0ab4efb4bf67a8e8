import FiregateModel
import Hummingbird
import NIOCore
import SwiftProtobuf

/// gRPC's length-prefixed messages (gRPC over HTTP/2, "Length-Prefixed-Message"): a compressed
/// flag byte, a big-endian 4-byte length, then the message.
enum GRPCFraming {
    /// Largest message accepted either way (docs/wire/grpc.md); larger ones are RESOURCE_EXHAUSTED.
    static let maxMessageBytes = 32 * 1024 * 1024

    static func frame(_ message: some SwiftProtobuf.Message) throws(FiregateError) -> ByteBuffer {
        let bytes: [UInt8]
        do { bytes = try message.serializedBytes() } catch { throw .internal("Could not encode the response: \(error)") }
        guard bytes.count <= maxMessageBytes else {
            throw .resourceExhausted("The response message is \(bytes.count) bytes, over the \(maxMessageBytes)-byte limit.")
        }
        return frame(bytes: bytes)
    }

    /// An encoded message with its prefix.
    static func frame(bytes: [UInt8]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(5 + bytes.count)
        buffer.writeInteger(UInt8(0))
        buffer.writeInteger(UInt32(bytes.count))
        buffer.writeBytes(bytes)
        return buffer
    }
}

/// Splits bytes into gRPC messages as they arrive (the async reader's and the event-loop
/// Listen's): whole messages out, the errors a bad frame ends a call with.
struct GRPCDeframer {
    private var buffer = ByteBuffer()

    var isEmpty: Bool { buffer.readableBytes == 0 }

    mutating func append(_ bytes: inout ByteBuffer) {
        buffer.writeBuffer(&bytes)
    }

    /// The next whole message's bytes, nil until one has arrived.
    mutating func next() throws(FiregateError) -> ByteBuffer? {
        guard buffer.readableBytes >= 5, let flag = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
              let length = buffer.getInteger(at: buffer.readerIndex + 1, as: UInt32.self) else { return nil }
        switch flag {
        case 0: break
        case 1: throw .unimplemented("Compressed request messages are not supported; send them uncompressed (grpc-encoding: identity).")
        default: throw .internal("Invalid gRPC message frame: compressed flag \(flag).")
        }
        guard length <= GRPCFraming.maxMessageBytes else {
            throw .resourceExhausted("Received message larger than max (\(length) vs. \(GRPCFraming.maxMessageBytes))")
        }
        guard buffer.readableBytes >= 5 + Int(length) else { return nil }
        buffer.moveReaderIndex(forwardBy: 5)
        let message = buffer.readSlice(length: Int(length))!
        if buffer.readableBytes == 0 { buffer.clear() }
        return message
    }

    /// `bytes` decoded as `M`.
    static func decode<M: SwiftProtobuf.Message>(_ bytes: ByteBuffer, as type: M.Type) throws(FiregateError) -> M {
        do {
            return try M(serializedBytes: Array(bytes.readableBytesView))
        } catch {
            throw .invalidArgument("Invalid \(M.protoMessageName) message: \(error)")
        }
    }
}

/// Splits a call's request body into messages as they arrive.
struct GRPCMessageReader {
    private var body: RequestBody.AsyncIterator
    private var deframer = GRPCDeframer()
    /// Paces each message by the network switch's latency.
    var ticket: GRPCCallTicket?

    init(_ body: RequestBody) {
        self.body = body.makeAsyncIterator()
    }

    /// A message read ahead by `peek()`, or how reading it ended.
    private var peeked: Result<ByteBuffer?, FiregateError>?

    /// Reads the next message ahead (the call's database, when its metadata does not name it);
    /// `next()` returns it (or throws what reading it threw). Nil when there is none.
    mutating func peek() async -> ByteBuffer? {
        if peeked == nil {
            do { peeked = .success(try await next()) } catch { peeked = .failure(error) }
        }
        if case .success(let message?) = peeked { return message }
        return nil
    }

    /// The next message's bytes; nil once the client has half-closed. A reset stream throws
    /// CANCELLED; a bad frame throws the status the call ends with.
    mutating func next() async throws(FiregateError) -> ByteBuffer? {
        if let ahead = peeked {
            peeked = nil
            return try ahead.get()
        }
        while true {
            if let message = try deframer.next() {
                await ticket?.pace()
                return message
            }
            let chunk: ByteBuffer?
            do { chunk = try await body.next() } catch { throw .cancelled("The call was cancelled.") }
            guard var chunk else {
                if !deframer.isEmpty { throw .internal("The request ended inside a message.") }
                return nil
            }
            deframer.append(&chunk)
        }
    }

    /// The next message decoded as `M`.
    mutating func next<M: SwiftProtobuf.Message>(_ type: M.Type) async throws(FiregateError) -> M? {
        guard let bytes = try await next() else { return nil }
        return try GRPCDeframer.decode(bytes, as: M.self)
    }
}

/// The response side of a call: framed messages on the stream Hummingbird opened (its head is
/// already sent, so every outcome, errors included, ends with trailers — docs/wire/grpc.md, Errors).
struct GRPCMessageWriter<Body: ResponseBodyWriter> {
    private var body: Body
    /// Paces each message by the network switch's latency.
    var ticket: GRPCCallTicket?

    init(_ body: Body) {
        self.body = body
    }

    mutating func send(_ message: some SwiftProtobuf.Message) async throws {
        let frame = try GRPCFraming.frame(message)
        await ticket?.pace()
        try await body.write(frame)
    }

    /// Sends `messages` in one write (one DATA frame when they fit): a commit's responses to a
    /// Listen stream go out together, one wake-up of the connection per stream.
    mutating func send<Message: SwiftProtobuf.Message>(all messages: [Message]) async throws {
        guard messages.count > 1 else {
            if let only = messages.first { try await send(only) }
            return
        }
        var frames = try GRPCFraming.frame(messages[0])
        for message in messages.dropFirst() {
            var next = try GRPCFraming.frame(message)
            frames.writeBuffer(&next)
        }
        await ticket?.pace()
        try await body.write(frames)
    }

    /// Ends the call with `status` (nil is OK) in the trailers.
    consuming func finish(_ status: FiregateError?) async throws {
        try await body.finish(ErrorResponse.grpcTrailers(status))
    }
}
