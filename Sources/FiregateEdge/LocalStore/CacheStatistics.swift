/// How a client's cache has served it since the client was created: reads it answered
/// (`hits`), document reads it could not answer offline (`misses`), and documents garbage
/// collection removed (`evictions`). Shown in client state and in `/metrics`.
public struct CacheStatistics: Sendable, Equatable {
    public var hits: Int64 = 0
    public var misses: Int64 = 0
    public var evictions: Int64 = 0
}

/// One client's figures for `/metrics`.
public struct ClientSample: Sendable {
    public let online: Bool
    public let cacheBytes: Int
    public let cacheDocuments: Int
    public let cache: CacheStatistics
    public let pendingWrites: Int
}
