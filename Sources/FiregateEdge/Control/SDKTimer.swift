import FiregateModel

/// The SDK's named timers (util/async_queue.ts TimerId) that `POST /clients/{id}:runTimer`
/// fires at once, so a test sees what waiting would do without waiting.
public enum SDKTimer: String, Sendable, CaseIterable {
    /// The watch stream reopens after a failure.
    case listenStreamConnectionBackoff = "listen_stream_connection_backoff"
    /// A watch stream with nothing to listen to closes.
    case listenStreamIdle = "listen_stream_idle"
    /// Queued writes are sent again after a failure.
    case writeStreamConnectionBackoff = "write_stream_connection_backoff"
    case writeStreamIdle = "write_stream_idle"
    /// A stream that connected but said nothing for 10 s makes the client offline.
    case onlineStateTimeout = "online_state_timeout"
    /// The scheduled LRU collection of the cache.
    case lruGarbageCollection = "lru_garbage_collection"
    case clientMetadataRefresh = "client_metadata_refresh"
    case healthCheckTimeout = "health_check_timeout"
    case asyncQueueRetry = "async_queue_retry"

    /// A timer by its SDK name; `"all"` is every timer.
    public static func parse(_ name: String) -> [SDKTimer]? {
        name == "all" ? allCases : SDKTimer(rawValue: name).map { [$0] }
    }

    /// The timers a `:runTimer` body (`{"timer": name}`) names.
    public static func parse(body: JSON) throws(FiregateError) -> [SDKTimer] {
        guard let name = body["timer"]?.stringValue, let timers = parse(name) else {
            throw .invalidArgument("timer must be \"all\" or one of \(allCases.map(\.rawValue).joined(separator: ", ")).")
        }
        return timers
    }
}
