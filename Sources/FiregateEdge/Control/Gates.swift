import FiregateModel

/// Test gates: hold what the backend sends this client, hold what it sends the backend, or
/// detach the watch from the backend so the test scripts it.
public struct Gates: Sendable, Equatable {
    public var holdWatch = false
    public var holdWrites = false
    public var scriptedWatch = false
    /// Most limbo lookups a scripted watch has open at once (the SDK's default: 100).
    public var maxConcurrentLimboResolutions = 100

    public var json: JSON {
        ["holdWatch": .bool(holdWatch), "holdWrites": .bool(holdWrites), "scriptedWatch": .bool(scriptedWatch),
         "maxConcurrentLimboResolutions": .int(Int64(maxConcurrentLimboResolutions))]
    }
}
