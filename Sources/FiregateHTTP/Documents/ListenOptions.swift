/// Settings of SSE listen streams.
public struct ListenOptions: Sendable {
    /// Interval of `: keep-alive` comments.
    public var keepAliveSeconds: Double = 15
    /// Commits a listener may fall behind before it is resynchronised with a full reset.
    public var bufferLimit: Int = 1024

    public init() {}
}
