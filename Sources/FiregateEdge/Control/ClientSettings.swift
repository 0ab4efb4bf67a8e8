import FiregateModel

/// An edge client's settings, as FirestoreSettings: which database, persistence, cache size,
/// garbage collector, clock offset, heartbeat timeout. Platform presets give the SDKs' defaults.
public struct ClientSettings: Sendable, Equatable {
    public enum Persistence: String, Sendable { case persistent, memory }
    public enum GarbageCollector: String, Sendable { case lru, eager }
    public enum Platform: String, Sendable { case android, apple, web }

    public var platform: Platform = .apple
    public var project: String
    public var database: String = "(default)"
    public var namespace: String
    public var persistence: Persistence = .persistent
    public var cacheSizeBytes: Int64 = 100 * 1024 * 1024
    public var garbageCollector: GarbageCollector = .lru
    public var clockOffsetMs: Int64 = 0
    public var heartbeatTimeoutMs: Int64?
    /// The tree cache's size (the RTDB SDK's persistenceCacheSizeBytes): 10 MiB by default,
    /// 1–100 MiB.
    public var treeCacheSizeBytes: Int64 = 10 * 1024 * 1024

    public static let minimumCacheSizeBytes: Int64 = 1_048_576
    public static let unlimitedCacheSize: Int64 = -1

    public init(project: String) {
        self.project = project
        namespace = project
    }

    public var databaseID: DatabaseID { DatabaseID(project: project, database: database) }

    /// Applies a PUT body over `defaults`: a `platform` first resets to that SDK's defaults,
    /// then each given field overrides. Invalid values are INVALID_ARGUMENT.
    public static func parse(_ json: JSON, over current: ClientSettings) throws(FiregateError) -> ClientSettings {
        guard case .object(let members) = json else { throw .invalidArgument("Client settings must be a JSON object.") }
        let known: Set<String> = ["platform", "project", "database", "namespace", "persistence", "cacheSizeBytes", "garbageCollector",
                                  "clockOffsetMs", "heartbeatTimeoutMs", "treeCacheSizeBytes"]
        if let unknown = members.keys.first(where: { !known.contains($0) }) {
            throw .invalidArgument("Unknown client setting \"\(unknown)\".")
        }
        var settings = current
        if let platform = json["platform"], platform != .null {
            guard let name = platform.stringValue, let p = Platform(rawValue: name) else {
                throw .invalidArgument("platform must be \"android\", \"apple\" or \"web\".")
            }
            settings.platform = p
            switch p {
            case .android, .apple:
                settings.persistence = .persistent
                settings.cacheSizeBytes = 100 * 1024 * 1024
                settings.garbageCollector = .lru
            case .web:
                settings.persistence = .memory
                settings.cacheSizeBytes = 40 * 1024 * 1024
                settings.garbageCollector = .eager
            }
        }
        if let project = json["project"], project != .null {
            guard let text = project.stringValue, !text.isEmpty, !text.contains("/") else { throw .invalidArgument("project must be a non-empty id.") }
            settings.project = text
            if json["namespace"] == nil { settings.namespace = text }
        }
        if let database = json["database"], database != .null {
            guard let text = database.stringValue, !text.isEmpty, !text.contains("/") else { throw .invalidArgument("database must be a non-empty id.") }
            settings.database = text
        }
        if let namespace = json["namespace"], namespace != .null {
            guard let text = namespace.stringValue, !text.isEmpty else { throw .invalidArgument("namespace must be a non-empty string.") }
            settings.namespace = text
        }
        if let persistence = json["persistence"], persistence != .null {
            guard let name = persistence.stringValue, let p = Persistence(rawValue: name) else {
                throw .invalidArgument("persistence must be \"persistent\" or \"memory\".")
            }
            settings.persistence = p
            if p == .persistent, settings.platform == .web, json["cacheSizeBytes"] == nil {
                settings.cacheSizeBytes = 40 * 1024 * 1024
                if json["garbageCollector"] == nil { settings.garbageCollector = .lru }
            }
        }
        if let size = json["cacheSizeBytes"], size != .null {
            guard case .int(let n) = size else { throw .invalidArgument("cacheSizeBytes must be an integer.") }
            guard n == unlimitedCacheSize || n >= minimumCacheSizeBytes else {
                throw .invalidArgument("cacheSizeBytes must be at least 1048576")
            }
            settings.cacheSizeBytes = n
        }
        if let gc = json["garbageCollector"], gc != .null {
            guard let name = gc.stringValue, let g = GarbageCollector(rawValue: name) else {
                throw .invalidArgument("garbageCollector must be \"lru\" or \"eager\".")
            }
            settings.garbageCollector = g
        }
        if let offset = json["clockOffsetMs"], offset != .null {
            guard case .int(let n) = offset else { throw .invalidArgument("clockOffsetMs must be an integer.") }
            settings.clockOffsetMs = n
        }
        if let timeout = json["heartbeatTimeoutMs"] {
            switch timeout {
            case .null: settings.heartbeatTimeoutMs = nil
            case .int(let n) where n > 0: settings.heartbeatTimeoutMs = n
            default: throw .invalidArgument("heartbeatTimeoutMs must be a positive integer or null.")
            }
        }
        if let size = json["treeCacheSizeBytes"], size != .null {
            guard case .int(let n) = size else { throw .invalidArgument("treeCacheSizeBytes must be an integer.") }
            guard n >= 1024 * 1024 else { throw .invalidArgument("treeCacheSizeBytes: the minimum cache size must be at least 1MB") }
            guard n <= 100 * 1024 * 1024 else {
                throw .invalidArgument("treeCacheSizeBytes: Firebase Database currently doesn't support a cache size larger than 100MB")
            }
            settings.treeCacheSizeBytes = n
        }
        return settings
    }

    public var json: JSON {
        [
            "platform": .string(platform.rawValue),
            "project": .string(project),
            "database": .string(database),
            "namespace": .string(namespace),
            "persistence": .string(persistence.rawValue),
            "cacheSizeBytes": .int(cacheSizeBytes),
            "garbageCollector": .string(garbageCollector.rawValue),
            "clockOffsetMs": .int(clockOffsetMs),
            "heartbeatTimeoutMs": heartbeatTimeoutMs.map { .int($0) } ?? .null,
            "treeCacheSizeBytes": .int(treeCacheSizeBytes),
        ]
    }
}
