import FiregateModel

/// What the sync engine knows of one listener's query (the SDK's QueryView and its target's
/// server state): the view, whether the target is current and, on the live watch, the server's
/// result for it.
struct QueryState {
    let query: Query
    /// `query.targetCanonicalID` (a query and its mirror share a target), computed once.
    let queryID: String
    /// The listener's options: from the cache only, and the tab it belongs to.
    let options: ListenerOptions
    var view: QueryView
    /// The documents the server last said are in this listener's target.
    var serverPaths: Set<ResourcePath> = []
    /// Whether the target has received its server result since the last (re)connect.
    var current = false
    /// The feed sequence the server result reflects; later commits are applied to it one by one
    /// (nil until the first server result, and again while the watch is down).
    var serverSequence: Int64?
    /// For a windowed query (limit or offset): the server's whole match set, so a document
    /// leaving the window lets the next one in. Unwindowed queries need only `serverPaths`.
    var matches: QueryMatches?
    /// Live watch: documents a bundle brought that the server has not yet been asked about
    /// (limbo until the next server result looks them up).
    var unresolved: Set<ResourcePath> = []
}

/// The sync engine's query side (the SDK's queryViewsByQuery and limbo bookkeeping): each open
/// listener's query state, by listener id, and the scripted watch's limbo lookups.
struct QueryStates {
    var states: [Int: QueryState] = [:]
    var limbo = LimboResolutions(maxConcurrent: 100)

    /// Whether some listener of `queryID` listens to the server (not only the cache).
    func listensToServer(_ queryID: String) -> Bool {
        states.values.contains { $0.queryID == queryID && !$0.options.cacheOnly }
    }

    /// Every target stops being current (the stream went down).
    mutating func markAllNotCurrent() {
        for listenerID in states.keys { states[listenerID]?.current = false }
    }

    /// The query states of `queryID` go (its listeners ended).
    mutating func remove(queryID: String) {
        states = states.filter { $0.value.queryID != queryID }
    }
}
