import Foundation

/// Tunables of tree streams. Defaults follow production; the environment can override them
/// (`FIREGATE_TREE_KEEPALIVE_SECONDS`, `FIREGATE_TREE_STREAM_BUFFER_BYTES`,
/// `FIREGATE_TREE_STREAM_MAX_BYTES`), which tests use to see keep-alives and cancels quickly.
public struct TreeStreamSettings: Sendable {
    /// Time between `keep-alive` events on every open stream.
    public var keepAliveInterval: Duration = .seconds(30)
    /// Bytes of events a stream may hold for a slow reader before it is resynced.
    public var maxBufferedBytes = 1 << 20
    /// Largest first `put` a stream may send; a larger location is cancelled instead.
    public var maxSnapshotBytes = 256 << 20

    public init() {}

    /// Defaults, overridden by the environment where set.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> TreeStreamSettings {
        var settings = TreeStreamSettings()
        if let seconds = environment["FIREGATE_TREE_KEEPALIVE_SECONDS"].flatMap(Double.init), seconds > 0 {
            settings.keepAliveInterval = .milliseconds(Int64(seconds * 1000))
        }
        if let bytes = environment["FIREGATE_TREE_STREAM_BUFFER_BYTES"].flatMap(Int.init), bytes > 0 {
            settings.maxBufferedBytes = bytes
        }
        if let bytes = environment["FIREGATE_TREE_STREAM_MAX_BYTES"].flatMap(Int.init), bytes > 0 {
            settings.maxSnapshotBytes = bytes
        }
        return settings
    }
}
