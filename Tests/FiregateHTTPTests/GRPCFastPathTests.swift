import FiregateBackend
@testable import FiregateHTTP
import FiregateModel
import FiregateProto
import FiregateTestSupport
import Foundation
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import SwiftProtobuf
import XCTest

/// The gRPC unary fast path between the HTTP/2 handler and the multiplexer, on an embedded
/// channel: what it answers from the frames, and what it hands on untouched and in order.
final class GRPCFastPathTests: XCTestCase {
    let stream = HTTP2StreamID(1)

    /// Records what passes the fast path towards the multiplexer.
    final class Passed: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTP2Frame
        var items: [String] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            switch frame.payload {
            case .headers(let headers): items.append("headers \(Int(frame.streamID)) \(headers.headers.first(name: ":path") ?? "trailers")")
            case .data(let data): items.append("data \(Int(frame.streamID)) \(data.data.readableBytes) end=\(data.endStream)")
            default: items.append("frame \(Int(frame.streamID))")
            }
        }
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if let created = event as? NIOHTTP2StreamCreatedEvent { items.append("created \(Int(created.streamID))") }
        }
    }

    func makeChannel(_ backend: Backend) throws -> (EmbeddedChannel, Passed) {
        let registry = ConnectionRegistry(backend: backend)
        let service = FirestoreGRPCService(backend: backend, listenOptions: ListenOptions(),
                                           connections: GRPCConnections(registry: registry, metrics: ServerMetrics()))
        let passed = Passed()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(GRPCFastPath(service: service, logger: .init(label: "test")))
        try channel.pipeline.syncOperations.addHandler(passed)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()  // active: answers are written
        return (channel, passed)
    }

    func head(_ method: String, prefix: Bool = true) -> HTTP2Frame {
        var headers: HPACKHeaders = [":method": "POST", ":scheme": "http", ":path": "/google.firestore.v1.Firestore/\(method)",
                                     "content-type": "application/grpc", "te": "trailers"]
        if prefix { headers.add(name: "google-cloud-resource-prefix", value: "projects/p/databases/(default)") }
        return HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers)))
    }

    func body(_ message: some SwiftProtobuf.Message, end: Bool = true) throws -> HTTP2Frame {
        let bytes: [UInt8] = try message.serializedBytes()
        var buffer = ByteBuffer()
        buffer.writeInteger(UInt8(0))
        buffer.writeInteger(UInt32(bytes.count))
        buffer.writeBytes(bytes)
        return HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(buffer), endStream: end)))
    }

    /// Frames written back: (kind, the gRPC status or the message bytes).
    func written(_ channel: EmbeddedChannel) throws -> [HTTP2Frame.FramePayload] {
        var out: [HTTP2Frame.FramePayload] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) { out.append(frame.payload) }
        return out
    }

    func testGetDocumentIsAnsweredFromItsFrames() async throws {
        let backend = try await Backend.inMemory()
        _ = try await backend.documents.database(testDB).commit([Write(path: ResourcePath(["rooms", "r1"]), operation: .update(fields: ["n": .integer(7)], mask: nil))])
        let (channel, passed) = try makeChannel(backend)
        var request = Google_Firestore_V1_GetDocumentRequest()
        request.name = "projects/p/databases/(default)/documents/rooms/r1"
        try channel.writeInbound(head("GetDocument"))
        channel.pipeline.fireUserInboundEventTriggered(NIOHTTP2StreamCreatedEvent(streamID: stream, localInitialWindowSize: 65535, remoteInitialWindowSize: 65535))
        try channel.writeInbound(body(request))
        channel.pipeline.fireChannelReadComplete()
        let frames = try written(channel)
        XCTAssertEqual(frames.count, 3, "\(passed.items)")
        guard case .data(let data) = frames[1], case .byteBuffer(var bytes) = data.data,
              case .headers(let trailers) = frames[2] else { return XCTFail("\(frames)") }
        bytes.moveReaderIndex(forwardBy: 5)
        let document = try Google_Firestore_V1_Document(serializedBytes: Array(bytes.readableBytesView))
        XCTAssertEqual(document.name, request.name)
        XCTAssertEqual(document.fields["n"]?.integerValue, 7)
        XCTAssertEqual(trailers.headers.first(name: "grpc-status"), "0")
        XCTAssertTrue(trailers.endStream)
        XCTAssertEqual(passed.items, [])  // nothing reached the multiplexer: no stream channel

        request.name = "projects/p/databases/(default)/documents/rooms/missing"
        let next = HTTP2StreamID(3)
        try channel.writeInbound(HTTP2Frame(streamID: next, payload: head("GetDocument").payload))
        try channel.writeInbound(HTTP2Frame(streamID: next, payload: try body(request).payload))
        channel.pipeline.fireChannelReadComplete()
        guard case .headers(let missing)? = try written(channel).last else { return XCTFail() }
        XCTAssertEqual(missing.headers.first(name: "grpc-status"), "5")
    }

    func testCallsItDoesNotAnswerReachTheMultiplexerWholeAndInOrder() async throws {
        let backend = try await Backend.inMemory()
        let (channel, passed) = try makeChannel(backend)
        // A commit in a transaction: held until its end, then handed on with its stream event.
        var commit = Google_Firestore_V1_CommitRequest()
        commit.database = "projects/p/databases/(default)"
        commit.transaction = Data([1, 2, 3])
        try channel.writeInbound(head("Commit"))
        channel.pipeline.fireUserInboundEventTriggered(NIOHTTP2StreamCreatedEvent(streamID: stream, localInitialWindowSize: 65535, remoteInitialWindowSize: 65535))
        XCTAssertEqual(passed.items, [])
        let frame = try body(commit)
        try channel.writeInbound(frame)
        XCTAssertEqual(passed.items, ["headers 1 /google.firestore.v1.Firestore/Commit", "created 1", "data 1 \(frame.payload.dataBytes) end=true"])
        XCTAssertEqual(try written(channel).count, 0)

        // A Listen without routing metadata passes at once (no scope to admit it on); with it, the
        // call is this path's: its response head goes out.
        passed.items = []
        let listen = HTTP2StreamID(3)
        try channel.writeInbound(HTTP2Frame(streamID: listen, payload: head("Listen", prefix: false).payload))
        XCTAssertEqual(passed.items, ["headers 3 /google.firestore.v1.Firestore/Listen"])
        passed.items = []
        try channel.writeInbound(HTTP2Frame(streamID: HTTP2StreamID(7), payload: head("Listen").payload))
        XCTAssertEqual(passed.items, [])
        guard case .headers(let listenHead)? = try written(channel).first else { return XCTFail("no response head") }
        XCTAssertEqual(listenHead.headers.first(name: ":status"), "200")

        // A body over the held limit is handed on as it grows.
        passed.items = []
        let large = HTTP2StreamID(5)
        try channel.writeInbound(HTTP2Frame(streamID: large, payload: head("Commit").payload))
        let chunk = ByteBuffer(repeating: 0, count: GRPCFastPath.maxHeldBody + 1)
        try channel.writeInbound(HTTP2Frame(streamID: large, payload: .data(.init(data: .byteBuffer(chunk)))))
        XCTAssertEqual(passed.items, ["headers 5 /google.firestore.v1.Firestore/Commit", "data 5 \(chunk.readableBytes) end=false"])
    }
}

private extension HTTP2Frame.FramePayload {
    var dataBytes: Int {
        if case .data(let data) = self { return data.data.readableBytes }
        return 0
    }
}
