import FiregateWebChannel
import Hummingbird
import NIOCore
import ServiceLifecycle

/// Writes one back-channel request: streaming (`CI=0`) writes what is queued at once — a
/// `noop` if nothing is, since the client takes a silent first moment for a buffering proxy and
/// falls back to long polling — then each array as it comes and a `noop` every `wait`, until
/// it has written `recycleCharacters` or lived `recycleAfter` (the client then opens the next,
/// acknowledging what it read). Long polling (`CI=1`) waits up to `wait` for arrays, writes
/// them (or a `noop`) and ends.
struct WebChannelBackChannelWriter: Sendable {
    static let recycleCharacters = 512 * 1024
    static let recycleAfter: Duration = .seconds(60)

    let channel: WebChannelBackChannel
    /// The session's stream, whose Listen engine takes commits in before each look.
    let stream: WebChannelStream
    let longPoll: Bool
    let wait: Duration
    let registry: ConnectionRegistry
    let entryID: String?

    func run(_ body: inout any ResponseBodyWriter) async {
        var channel = self.channel
        let started = ContinuousClock.now
        var lastWrite = started, written = 0
        let ticker = Task { [channel, wait] in
            while (try? await Task.sleep(for: wait / 4)) != nil { channel.ring() }
        }
        defer {
            ticker.cancel()
            channel.close()
        }
        var wakeups = channel.wakeups.makeAsyncIterator()
        let stream = self.stream
        func poll() -> WebChannelSession.Poll {
            stream.pump(for: channel)
            return channel.poll()
        }
        do {
            try await withGracefulShutdownHandler {
                if !longPoll, case .nothing = poll() { channel.keepAlive() }
                writing: while true {
                    switch poll() {
                    case .arrays(let arrays):
                        if let entryID {
                            let delay = registry.latency(entryID)
                            if delay > .zero { try await Task.sleep(for: delay) }
                        }
                        let (frame, length) = WebChannelBackChannelWriter.chunk(arrays)
                        try await body.write(frame)
                        channel.wrote(through: arrays.last!.id)
                        written += length
                        lastWrite = .now
                        if longPoll || written >= WebChannelBackChannelWriter.recycleCharacters
                            || ContinuousClock.now - started >= WebChannelBackChannelWriter.recycleAfter { break writing }
                        continue
                    case .nothing:
                        if ContinuousClock.now - lastWrite >= wait {
                            channel.keepAlive()
                            continue
                        }
                    case .superseded, .ended:
                        break writing
                    }
                    guard await wakeups.next() != nil, !Task.isCancelled else { break writing }
                }
            } onGracefulShutdown: { [channel = self.channel] in
                channel.close()
            }
            try await body.finish(nil)
        } catch {
            // The client went away.
        }
    }

    /// `WebChannelFraming.chunk(WebChannelFraming.arrays(arrays))` written straight into a
    /// buffer, its length counted from the payloads' known lengths; and that length.
    static func chunk(_ arrays: [WebChannelArray]) -> (frame: ByteBuffer, length: Int) {
        let length = WebChannelFraming.arraysLength(arrays)
        var frame = ByteBuffer()
        frame.reserveCapacity(length + arrays.count * 8 + 12)
        frame.writeString(String(length))
        frame.writeStaticString("\n[")
        for (k, array) in arrays.enumerated() {
            frame.writeStaticString(k == 0 ? "[" : ",[")
            frame.writeString(String(array.id))
            frame.writeStaticString(",")
            frame.writeString(array.payload)
            frame.writeStaticString("]")
        }
        frame.writeStaticString("]")
        return (frame, String(length).utf8.count + 1 + length)
    }
}
