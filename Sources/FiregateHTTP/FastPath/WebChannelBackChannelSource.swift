import FiregateModel
import FiregateWebChannel
import HTTPTypes
import NIOCore
import Synchronization

/// A WebChannel session's streaming back channel (`CI=0`) for an `EventLoopStream`: what
/// `WebChannelBackChannelWriter` writes on the full path — a `noop` at once when nothing is
/// queued, each batch of arrays as one chunk, a `noop` when the channel was quiet for
/// `WebChannelRoutes.keepAlive`, the end once it wrote `recycleCharacters` or lived
/// `recycleAfter` — written from the connection's event loop. Before each look the session's
/// Listen engine takes the database's commits in, so a commit reaches the page with no task
/// switch (docs/webchannel.md, "Fan-out").
final class WebChannelBackChannelSource: EventLoopStreamSource {
    private let stream: WebChannelStream
    private var channel: WebChannelBackChannel
    private let registry: ConnectionRegistry
    private let loop: any EventLoop
    private let ticker: KeepAliveTicker
    private let beat: KeepAliveTicker.Registration
    private let wake: WakeSlot
    /// Fires the slot: what the session, the feed and the ticker call.
    private let fire: @Sendable () -> Void
    private let started = ContinuousClock.now
    private var lastWrite = ContinuousClock.now
    private var written = 0
    private var opened = false
    /// When arrays held back by the network switch's latency may go.
    private var due: ContinuousClock.Instant?

    /// Opens a back channel of `stream`'s session, superseding any other, after the client's
    /// acknowledgement `acknowledged`.
    init(_ stream: WebChannelStream, acknowledged: Int, registry: ConnectionRegistry, ticker: KeepAliveTicker, loop: any EventLoop) {
        let wake = WakeSlot()
        self.stream = stream
        self.registry = registry
        self.ticker = ticker
        self.loop = loop
        self.wake = wake
        let fire = { @Sendable in wake.fire() }
        self.fire = fire
        channel = stream.session.openBackChannel(acknowledging: acknowledged, wake: fire)
        // The ticker wakes a quiet channel to look whether it owes a keep-alive.
        beat = ticker.register(beat: fire)
    }

    var surface: Surface { .webchannel }
    var headers: HTTPFields { WebChannelRoutes.headers }

    func poll(wake eventLoopWake: @escaping @Sendable () -> Void) -> EventLoopStreamPoll {
        // Armed first: whatever changes after this look wakes the stream again.
        wake.arm(eventLoopWake)
        while true {
            stream.pump(wake: fire)
            switch channel.poll() {
            case .arrays(let arrays):
                if let held = holdForLatency() { return held }
                let text = WebChannelFraming.chunk(WebChannelFraming.arrays(arrays))
                channel.wrote(through: arrays.last!.id)
                opened = true
                written += text.utf16.count
                lastWrite = .now
                let frame = ByteBuffer(string: text)
                if written >= WebChannelBackChannelWriter.recycleCharacters || lastWrite - started >= WebChannelBackChannelWriter.recycleAfter {
                    return .ended(last: frame)
                }
                return .frames([frame])
            case .nothing:
                // The first bytes go at once: a silent back channel looks like a buffering proxy.
                guard !opened || ContinuousClock.now - lastWrite >= WebChannelRoutes.keepAlive else { return .waiting }
                opened = true
                channel.keepAlive()
            case .superseded, .ended:
                return .ended(last: nil)
            }
        }
    }

    /// Nil when the arrays may go now; else `.waiting`, woken when the network switch's latency
    /// for this page has passed.
    private func holdForLatency() -> EventLoopStreamPoll? {
        guard let entryID = stream.entryID else { return nil }
        let delay = registry.latency(entryID)
        guard delay > .zero else {
            due = nil
            return nil
        }
        let now = ContinuousClock.now
        let until = due ?? now + delay
        guard now < until else {
            due = nil
            return nil
        }
        due = until
        let fire = self.fire
        loop.scheduleTask(in: .nanoseconds((until - now).nanoseconds)) { fire() }
        return .waiting
    }

    func shutDown() -> [ByteBuffer] {
        stream.end(.unavailable("The server is shutting down."))
        guard case .arrays(let arrays) = channel.poll() else { return [] }
        return [ByteBuffer(string: WebChannelFraming.chunk(WebChannelFraming.arrays(arrays)))]
    }

    func stop() {
        ticker.unregister(beat)
        wake.disarm()
        channel.close()
    }
}

/// The one wake-up an `EventLoopStream` armed at its last look: called by whoever has news
/// (the session, the feed, the ticker), from any thread, at most once per arming.
final class WakeSlot: Sendable {
    private let slot = Mutex<(@Sendable () -> Void)?>(nil)

    func arm(_ wake: @escaping @Sendable () -> Void) { slot.withLock { $0 = wake } }

    func disarm() { slot.withLock { $0 = nil } }

    func fire() { slot.withLock { wake in defer { wake = nil }; return wake }?() }
}
