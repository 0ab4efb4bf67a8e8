import FiregateBackend
import FiregateModel
import FiregateStore

/// Tabs of shared web persistences among the server's clients.
extension EdgeClients {
    /// The shared persistence `id` is an open tab of, if it is one.
    public func persistence(ofTab id: String) -> SharedPersistence? { shared.openTab(id) }

    /// The id a shared persistence's engine stores its cache and queue under (and archives
    /// carry; on replicas, what the replica running its tabs claims): no client id of a URL can
    /// be it, a `/` would end it.
    public static func engineID(_ key: String) -> String { "sharedWith/" + key }

    /// The persistence key of an engine id, nil for any other client id.
    public static func sharedPersistenceKey(_ id: String) -> String? {
        id.hasPrefix("sharedWith/") ? String(id.dropFirst("sharedWith/".count)) : nil
    }

    /// Whether `id` is a tab that closed (terminated): it answers as terminated.
    public func isClosedTab(_ id: String) -> Bool { shared.closedTab(id) != nil }

    /// The engine of the persistence a closed tab belonged to.
    public func closedTabEngine(_ id: String) -> EdgeClient? { shared.closedTab(id)?.engine }

    /// Opens tab `id` of the web persistence the body's `sharedWith` names (made, or restored
    /// from storage, by its first tab). Tabs need web persistence and the persistence's
    /// project and database.
    public func openTab(_ id: String, _ body: JSON, _ request: SharedPersistence.TabRequest) async throws(FiregateError) -> SharedPersistence {
        if persistence(ofTab: id) != nil { throw .clientState("Tab \"\(id)\" is already open; close it (DELETE) before opening it again.") }
        if let standalone = existing(id) {
            guard await !standalone.started else {
                throw .clientState("Client \"\(id)\" has already been started on its own persistence; a started client cannot become a tab.")
            }
            _ = await delete(id)
        }
        let asked = try ClientSettings.parse(body, over: ClientSettings(project: backend.defaultProject))
        guard asked.platform == .web, asked.persistence == .persistent else {
            throw .invalidArgument("sharedWith needs {\"platform\": \"web\", \"persistence\": \"persistent\"}: tabs share the web SDK's IndexedDB persistence.")
        }
        let (persistence, created) = shared.persistence(request.key) {
            SharedPersistence(key: request.key, engine: makeClient(EdgeClients.engineID(request.key)), clock: backend.clock)
        }
        let current = await persistence.engine.settings
        let engineStarted = await persistence.engine.started
        if created || !engineStarted {
            try await persistence.engine.configure(body)
        } else if current.project != asked.project || current.databaseID != asked.databaseID {
            throw .invalidArgument("Persistence \"\(request.key)\" belongs to \(current.project)/\(current.database); a tab of it cannot use another project or database.")
        }
        try await persistence.open(id, request)
        shared.register(id, in: persistence)
        backend.operations.record(.client(client: id, action: "tabOpened"))
        await persistence.engine.timeline.record(.tab, [("action", .string("opened")), ("tab", .string(id))])
        return persistence
    }

    /// Closes tab `id` (`remember`: it answers as terminated afterwards); its persistence, and
    /// what it stored, stay for the next tab.
    public func closeTab(_ id: String, remember: Bool) async -> Bool {
        guard let persistence = shared.unregister(id, remember: remember) else { return false }
        await persistence.close(id)
        backend.operations.record(.client(client: id, action: "tabClosed"))
        await persistence.engine.timeline.record(.tab, [("action", .string("closed")), ("tab", .string(id))])
        return true
    }

    /// `clearPersistence()` from a closed tab: every other tab shuts down, and the shared cache,
    /// targets and queue are deleted. The next tab with this key starts empty.
    public func clearPersistence(ofClosedTab id: String) async throws(FiregateError) {
        guard let persistence = shared.closedTab(id) else {
            throw .clientState("Persistence can only be cleared before a Firestore instance is initialized or after it is terminated.")
        }
        for tab in shared.remove(persistence) { await persistence.close(tab) }
        await retire(persistence.engine, reason: nil)
        // Stored before this answers: a tab opening the key next must find nothing.
        try? await EdgeCacheStorage(store: backend.edgeStore, clientID: EdgeClients.engineID(persistence.key)).flush()
        backend.operations.record(.client(client: id, action: "persistenceCleared"))
    }

    /// A client's state; a tab's is its engine's, under the tab's id, with its own network
    /// switch and its place in the persistence (`tab`); a closed tab's says it terminated.
    public func state(of id: String) async -> JSON {
        guard let persistence = persistence(ofTab: id) ?? shared.closedTab(id) else { return await client(id).state() }
        let tab = persistence.tabState(id)
        guard case .object(var members) = await persistence.engine.state() else { return .null }
        members["engine"] = members["id"]
        members["id"] = .string(id)
        members["tab"] = tab
        if tab["open"] == .bool(false) {
            members["terminated"] = true
            members["listeners"] = 0
        }
        if case .object(var network)? = members["network"] {
            network["online"] = tab["networkEnabled"]
            members["network"] = .object(network)
        }
        if let stale = persistence.staleWatch(id), stale["scripted"] == .bool(true) {
            members["watch"] = await persistence.engine.staleWatchState(stale)
        } else if tab["primary"] != .bool(true), case .object(var watch)? = members["watch"], watch["scripted"] == .bool(true) {
            // The watch stream is the primary's: a secondary tab listens to nothing itself.
            for name in ["targets", "limboDocuments", "enqueuedLimboDocuments"] { watch[name] = [] }
            members["watch"] = .object(watch)
        }
        return .object(members)
    }
}
