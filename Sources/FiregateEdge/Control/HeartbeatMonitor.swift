import FiregateModel

/// `heartbeatTimeoutMs`: the client's connection counts as dropped (its onDisconnect
/// operations run) when it made no request and held no stream for that long; the next
/// request reconnects it. The client owns the timer task; this keeps when it last heard.
struct HeartbeatMonitor {
    private(set) var lastActivityMicros: Int64 = 0
    private(set) var dropped = false
    private(set) var task: Task<Void, Never>?

    /// A request or stream at `now`. True when it reconnects a dropped connection.
    mutating func noteActivity(at now: Int64) -> Bool {
        lastActivityMicros = now
        defer { dropped = false }
        return dropped
    }

    /// A stream ended at `now`: the silence counts from then (an open stream was activity).
    mutating func noteStreamClosed(at now: Int64) {
        lastActivityMicros = max(lastActivityMicros, now)
    }

    /// The timer that watches for silence.
    mutating func started(_ timer: Task<Void, Never>) {
        task = timer
    }

    /// The silence lasted past the timeout: the connection drops, and its timer ends.
    mutating func drop() {
        dropped = true
        task = nil
    }

    /// When the connection drops without a word, or nil while it is dropped or has no timeout.
    func deadline(timeoutMs: Int64?) -> Int64? {
        guard !dropped, let timeoutMs, timeoutMs > 0 else { return nil }
        return lastActivityMicros + timeoutMs * 1000
    }

    mutating func stop() {
        task?.cancel()
        task = nil
    }
}
