import FiregateModel

/// `heartbeatTimeoutMs`: the client's connection counts as dropped (its onDisconnect
/// operations run) when it made no request and held no stream for that long; the next
/// request reconnects it.
struct HeartbeatMonitor {
    var lastActivityMicros: Int64 = 0
    var dropped = false
    var task: Task<Void, Never>?

    mutating func stop() {
        task?.cancel()
        task = nil
    }
}
