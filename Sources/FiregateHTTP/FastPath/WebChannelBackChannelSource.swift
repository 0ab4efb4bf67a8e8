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
    private let chunks: WebChannelChunkCache
    /// Fires the slot: what the session (for itself and the feed), the ticker and the latency
    /// timer call.
    private let fire: @Sendable () -> Void
    private let started = ContinuousClock.now
    private var lastWrite = ContinuousClock.now
    private var written = 0
    private var opened = false
    /// When arrays held back by the network switch's latency may go.
    private var due: ContinuousClock.Instant?

    /// Opens a back channel of `stream`'s session, superseding any other, after the client's
    /// acknowledgement `acknowledged`.
    init(_ stream: WebChannelStream, acknowledged: Int, origin: String?, replica: String?, registry: ConnectionRegistry, ticker: KeepAliveTicker,
         chunks: WebChannelChunkCache, loop: any EventLoop) {
        let wake = WakeSlot()
        self.stream = stream
        self.chunks = chunks
        self.registry = registry
        self.ticker = ticker
        self.loop = loop
        self.wake = wake
        headers = origin.map { WebChannelBackChannelSource.crossOriginHeaders($0, replica: replica != nil) } ?? WebChannelRoutes.headers
        let fire = { @Sendable in wake.fire() }
        self.fire = fire
        channel = stream.session.openBackChannel(acknowledging: acknowledged, wake: fire)
        // The ticker wakes a quiet channel to look whether it owes a keep-alive.
        beat = ticker.register(beat: { @Sendable in wake.beat() })
    }

    var surface: Surface { .webchannel }
    let headers: HTTPFields

    /// What `CrossOrigin` adds for a page (`Origin`) on the full path: the origin echoed, with
    /// credentials, and the headers a page may read (`Firegate-Replica` when the stream's head
    /// carries it).
    static func crossOriginHeaders(_ origin: String, replica: Bool) -> HTTPFields {
        var headers = WebChannelRoutes.headers
        headers[.accessControlAllowOrigin] = origin
        headers[.accessControlAllowCredentials] = "true"
        headers[.vary] = "Origin"
        headers[CrossOrigin.exposeHeaders] = (CrossOrigin.exposedHeaders + (replica ? ["Firegate-Replica"] : [])).joined(separator: ", ")
        return headers
    }

    func poll(wake eventLoopWake: @escaping @Sendable () -> Void) -> EventLoopStreamPoll {
        while true {
            // This look covers whatever rang before it.
            wake.clearPending()
            stream.pump(for: channel)
            switch channel.poll() {
            case .arrays(let arrays):
                if let held = holdForLatency(eventLoopWake) { return held }
                let chunk = chunks.chunk(arrays)
                let more = channel.wrote(through: arrays.last!.id)
                wake.noteWrite()
                opened = true
                written += chunk.length
                lastWrite = .now
                if written >= WebChannelBackChannelWriter.recycleCharacters || lastWrite - started >= WebChannelBackChannelWriter.recycleAfter {
                    return .ended(last: WebChannelBackChannelWriter.chunk(arrays).frame)
                }
                // All written and nothing rang since this look began: wait now rather than
                // look again (a fan-out's second look was a fifth of its step).
                let waiting = !more && wake.arm(eventLoopWake)
                return .chunks([chunk.bytes], waiting: waiting)
            case .nothing:
                // The first bytes go at once: a silent back channel looks like a buffering proxy.
                if opened && ContinuousClock.now - lastWrite < WebChannelRoutes.keepAlive {
                    // Armed unless something rang since this look began: then look again.
                    if wake.arm(eventLoopWake) { return .waiting }
                    continue
                }
                opened = true
                channel.keepAlive()
            case .superseded, .ended:
                return .ended(last: nil)
            }
        }
    }

    /// Nil when the arrays may go now; else `.waiting`, woken when the network switch's latency
    /// for this page has passed.
    private func holdForLatency(_ eventLoopWake: @escaping @Sendable () -> Void) -> EventLoopStreamPoll? {
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
        // This look is over: what rang during it is in the arrays held back.
        wake.clearPending()
        _ = wake.arm(eventLoopWake)
        let fire = self.fire
        loop.scheduleTask(in: .nanoseconds((until - now).nanoseconds)) { fire() }
        return .waiting
    }

    func shutDown() -> [ByteBuffer] {
        stream.end(.unavailable("The server is shutting down."))
        guard case .arrays(let arrays) = channel.poll() else { return [] }
        return [WebChannelBackChannelWriter.chunk(arrays).frame]
    }

    func stop() {
        ticker.unregister(beat)
        wake.disarm()
        channel.close()
    }
}

/// The one wake-up an `EventLoopStream` armed at its last look: called by whoever has news
/// (the session, the feed, the ticker), from any thread, at most once per arming. News while
/// nothing is armed — the stream is looking — is remembered, so the look that ends finds it
/// and looks again instead of waiting; the stream is not woken for news it wrote itself.
final class WakeSlot: Sendable {
    private struct State {
        var wake: (@Sendable () -> Void)?
        var pending = false
    }

    private let state = Mutex(State())
    private let wroteSinceBeat = Atomic<Bool>(false)

    /// Arms `wake`; false (nothing armed) when news came since `clearPending`.
    func arm(_ wake: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard !state.pending else { return false }
            state.wake = wake
            return true
        }
    }

    func clearPending() { state.withLock { $0.pending = false } }

    func disarm() { state.withLock { $0.wake = nil } }

    /// The stream wrote: it owes no keep-alive before the next beat.
    func noteWrite() { wroteSinceBeat.store(true, ordering: .relaxed) }

    /// The keep-alive ticker's call: fires unless the stream wrote since the last beat. A stream
    /// that writes owes no keep-alive, and waking every stream at once (a thousand pages)
    /// would hold up a fan-out that comes at the same moment.
    func beat() {
        if !wroteSinceBeat.exchange(false, ordering: .relaxed) { fire() }
    }

    func fire() {
        state.withLock { state -> (@Sendable () -> Void)? in
            guard let wake = state.wake else {
                state.pending = true
                return nil
            }
            state.wake = nil
            return wake
        }?()
    }
}
