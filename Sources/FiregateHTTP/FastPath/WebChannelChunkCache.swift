import FiregateWebChannel
import NIOCore
import Synchronization

/// Back-channel chunks in HTTP's chunked coding, kept by the arrays they carry: a commit fanned
/// out to sessions that numbered their arrays alike (pages opened the same way) is the same
/// bytes for each, encoded once and written from one buffer (docs/webchannel.md, "Fan-out").
/// Arrays are found by their ids and payload lengths, and told apart by their payloads, which
/// the sessions share with the fan-out's answer (so comparing them is cheap).
final class WebChannelChunkCache: Sendable {
    struct Key: Hashable, Sendable {
        let arrays: [WebChannelArray]

        func hash(into hasher: inout Hasher) {
            for array in arrays {
                hasher.combine(array.id)
                hasher.combine(array.payloadLength)
            }
        }
    }

    /// An encoded chunk, and the characters its WebChannel chunk counts (for recycling).
    struct Chunk: Sendable {
        let bytes: ByteBuffer
        let length: Int
    }

    private let capacity: Int
    static let largest = 16 * 1024
    private let chunks = Mutex<[Key: Chunk]>([:])

    init(capacity: Int = 32) {
        self.capacity = capacity
    }

    /// The chunk that carries `arrays`.
    func chunk(_ arrays: [WebChannelArray]) -> Chunk {
        let key = Key(arrays: arrays)
        if let known = chunks.withLock({ $0[key] }) { return known }
        let (frame, length) = WebChannelBackChannelWriter.chunk(arrays)
        let chunk = Chunk(bytes: EventLoopStream.chunk(frame), length: length)
        // A large chunk is a session catching up on its own, seldom shared.
        guard frame.readableBytes <= WebChannelChunkCache.largest else { return chunk }
        chunks.withLock { chunks in
            // Sessions move on together: older chunks are of no more use, so all go at once.
            if chunks.count >= capacity { chunks.removeAll(keepingCapacity: true) }
            chunks[key] = chunk
        }
        return chunk
    }
}
