import FiregateModel

/// What the sync engine knows of one listener's query (the SDK's QueryView): the query, the
/// listener's options, its view, and whether its target is current. The target's server state
/// is the target cache's (its keys) and, on the live watch, `FeedWatch`'s.
struct QueryState {
    let query: Query
    /// `query.targetCanonicalID` (a query and its mirror share a target), computed once.
    let queryID: String
    /// The listener's options: from the cache only, and the tab it belongs to.
    let options: ListenerOptions
    /// Changed only inside `QueryStates.updateView`.
    var view: QueryView
    /// Whether the target has received its server result since the last (re)connect.
    fileprivate(set) var current = false
}

/// The sync engine's query side (the SDK's queryViewsByQuery and limbo bookkeeping): each open
/// listener's query state, by listener id, and the scripted watch's limbo lookups. The states
/// change only through the verbs below.
struct QueryStates {
    private(set) var states: [Int: QueryState] = [:]
    /// The scripted watch's limbo lookups; replaced only through `resetLimbo`.
    var limbo = LimboResolutions(maxConcurrent: 100)

    /// Whether some listener of `queryID` listens to the server (not only the cache).
    func listensToServer(_ queryID: String) -> Bool {
        states.values.contains { $0.queryID == queryID && !$0.options.cacheOnly }
    }

    /// Whether another listener already keeps `queryID`'s target current: a new listener of it
    /// starts current, as the SDK shares the query's view between them.
    func isCurrent(_ queryID: String) -> Bool {
        states.values.contains { $0.queryID == queryID && !$0.options.cacheOnly && $0.current }
    }

    /// The listeners that listen to the server, in the order they were added.
    var serverListenerIDs: [Int] { states.compactMap { $0.value.options.cacheOnly ? nil : $0.key }.sorted() }

    /// The queries listened to on the server, by query id.
    var serverQueries: [String: Query] {
        var queries: [String: Query] = [:]
        for state in states.values where !state.options.cacheOnly { queries[state.queryID] = state.query }
        return queries
    }

    /// A new sync engine's limbo lookups (a new script, or another tab's term).
    mutating func resetLimbo(maxConcurrent: Int, nextTargetID: Int = 1) {
        limbo = LimboResolutions(maxConcurrent: maxConcurrent, nextTargetID: nextTargetID)
    }

    /// A new listener's query.
    mutating func add(_ listenerID: Int, query: Query, options: ListenerOptions, view: QueryView) {
        let queryID = query.targetCanonicalID
        states[listenerID] = QueryState(query: query, queryID: queryID, options: options, view: view, current: isCurrent(queryID))
    }

    /// The listener ended; returns its state.
    mutating func remove(_ listenerID: Int) -> QueryState? {
        states.removeValue(forKey: listenerID)
    }

    mutating func removeAll() {
        states.removeAll()
    }

    /// The query states of `queryID` go (its listeners ended).
    mutating func remove(queryID: String) {
        states = states.filter { $0.value.queryID != queryID }
    }

    /// Every target stops being current (the stream went down).
    mutating func markAllNotCurrent() {
        for listenerID in states.keys { states[listenerID]?.current = false }
    }

    /// The target of `queryID` is current or not: watch's word on it (every listener of the
    /// query), or a server result (`serverOnly`: the listeners that listen to the server).
    mutating func setCurrent(_ current: Bool, queryID: String, serverOnly: Bool = false) {
        for (listenerID, state) in states where state.queryID == queryID && !(serverOnly && state.options.cacheOnly) {
            states[listenerID]?.current = current
        }
    }

    /// Runs `body` on the listener's state with its view changeable (the state's other fields
    /// cannot change there). The state is out of the dictionary meanwhile, so its view's storage
    /// is not copied. Nil when there is no such listener.
    mutating func updateView<R>(of listenerID: Int, _ body: (inout QueryState) -> R) -> R? {
        guard var state = states.removeValue(forKey: listenerID) else { return nil }
        defer { states[listenerID] = state }
        return body(&state)
    }
}
