import FiregateModel

/// The SDK's bundle cache (local/bundle_cache.ts): the bundles loaded, by id with their create
/// time (a bundle no newer than the one loaded is skipped), and the named queries they carried.
/// Also the targets a bundle allocated that no listener has released yet: the SDK never
/// releases those, so an eager collector keeps them too.
struct BundleCache: Equatable {
    private(set) var loaded: [String: Timestamp] = [:]
    private(set) var namedQueries: [String: FirestoreBundle.NamedQuery] = [:]
    private(set) var heldTargets: Set<String> = []

    init() {}

    /// hasNewerBundle: a bundle with this id was loaded with the same or a later create time.
    func hasNewer(_ metadata: FirestoreBundle.Metadata) -> Bool {
        loaded[metadata.id].map { $0 >= metadata.createTime } ?? false
    }

    mutating func noteLoaded(_ metadata: FirestoreBundle.Metadata) { loaded[metadata.id] = metadata.createTime }

    mutating func save(_ query: FirestoreBundle.NamedQuery) { namedQueries[query.name] = query }

    mutating func hold(_ queryID: String) { heldTargets.insert(queryID) }

    /// A listener released the target: from now on it is collected as any other.
    mutating func release(_ queryID: String) { heldTargets.remove(queryID) }

    var isEmpty: Bool { loaded.isEmpty && namedQueries.isEmpty && heldTargets.isEmpty }

    /// `{"bundles":{id: createTime}, "namedQueries":[…], "heldTargets":[…]}`, as saved.
    var json: JSON {
        .object([
            "bundles": .object(.init(uniqueKeysWithValues: loaded.sorted { $0.key < $1.key }.map { ($0.key, JSON.string($0.value.rfc3339)) })),
            "namedQueries": .array(namedQueries.keys.sorted().compactMap { namedQueries[$0]?.json }),
            "heldTargets": .array(heldTargets.sorted().map { .string($0) }),
        ])
    }

    /// What `json` saved; parts that do not read are dropped (a cache may always lose entries).
    init(json: JSON) {
        for (id, time) in json["bundles"]?.objectValue ?? [:] {
            if let text = time.stringValue, let createTime = Timestamp(rfc3339: text) { loaded[id] = createTime }
        }
        for item in json["namedQueries"]?.arrayValue ?? [] {
            if let query = try? FirestoreBundle.NamedQuery(json: item) { namedQueries[query.name] = query }
        }
        heldTargets = Set((json["heldTargets"]?.arrayValue ?? []).compactMap(\.stringValue))
    }
}
