import Synchronization

/// Every shared web persistence by key, the one each open tab belongs to, and the one each
/// closed tab belonged to (a closed tab answers as terminated and can clear its persistence,
/// as a terminated SDK instance can).
final class SharedPersistences: Sendable {
    private struct State {
        var byKey: [String: SharedPersistence] = [:]
        var openTabs: [String: SharedPersistence] = [:]
        var closedTabs: [String: SharedPersistence] = [:]
    }

    private let state = Mutex(State())

    func openTab(_ id: String) -> SharedPersistence? { state.withLock { $0.openTabs[id] } }
    func closedTab(_ id: String) -> SharedPersistence? { state.withLock { $0.closedTabs[id] } }

    /// The persistence `key`, made by `make` if there is none; true when it was made.
    func persistence(_ key: String, orMake make: () -> SharedPersistence) -> (SharedPersistence, Bool) {
        state.withLock { state in
            if let existing = state.byKey[key] { return (existing, false) }
            let made = make()
            state.byKey[key] = made
            return (made, true)
        }
    }

    func register(_ tab: String, in persistence: SharedPersistence) {
        state.withLock { state in
            state.openTabs[tab] = persistence
            state.closedTabs[tab] = nil
        }
    }

    /// The tab is no longer open; `remember`: it answers as closed until forgotten.
    func unregister(_ tab: String, remember: Bool) -> SharedPersistence? {
        state.withLock { state in
            guard let persistence = state.openTabs.removeValue(forKey: tab) else { return nil }
            if remember { state.closedTabs[tab] = persistence }
            return persistence
        }
    }

    func forgetClosed(_ tab: String) -> Bool { state.withLock { $0.closedTabs.removeValue(forKey: tab) != nil } }

    /// Removes the persistence; its open tabs become closed ones. Returns those tabs.
    func remove(_ persistence: SharedPersistence) -> [String] {
        state.withLock { state in
            if state.byKey[persistence.key] === persistence { state.byKey[persistence.key] = nil }
            let tabs = state.openTabs.filter { $0.value === persistence }.map(\.key).sorted()
            for tab in tabs {
                state.openTabs[tab] = nil
                state.closedTabs[tab] = persistence
            }
            return tabs
        }
    }

    /// Empties the registry (a reset); returns every persistence.
    func removeAll() -> [SharedPersistence] {
        state.withLock { state in
            defer { state = State() }
            return Array(state.byKey.values)
        }
    }

    var openTabIDs: [String] { state.withLock { $0.openTabs.keys.sorted() } }
    var engines: [EdgeClient] { state.withLock { $0.byKey.values.map(\.engine) } }
}
