import FiregateModel

/// One listener on a tree view: the event types it asked for and where its events go.
struct TreeRegistration {
    let kinds: Set<TreeEvent.Kind>
    let output: AsyncStream<TreeListenerOutput>.Continuation
}

/// One view (the SDK's View in its SyncPoint): a location or query, what its listeners see,
/// and who listens. A kept-synced view has no listeners and raises nothing.
struct TreeView {
    let key: TreeViewKey
    var state: TreeViewState
    var registrations: [Int: TreeRegistration] = [:]
    var keptSynced = false

    var isActive: Bool { !registrations.isEmpty || keptSynced }
}

/// Every view of a client, and the event numbering of its streams. Given a view's new state
/// it raises the events of the change, in the SDK's order, to each registration that asked
/// for them (registration order within a view).
struct TreeViews {
    private(set) var views: [TreeViewKey: TreeView] = [:]
    private var nextRegistrationID = 1
    /// The `id:` of stream events, counted over the client.
    private(set) var eventCounter: Int64 = 0

    var listenerCount: Int { views.values.reduce(0) { $0 + $1.registrations.count } }
    var keys: Dictionary<TreeViewKey, TreeView>.Keys { views.keys }
    var keptSynced: [TreeViewKey] { views.values.filter(\.keptSynced).map(\.key) }

    subscript(key: TreeViewKey) -> TreeView? { views[key] }

    /// Whether some active view uses `spec`'s data.
    func isActive(_ spec: TreeQuerySpec) -> Bool {
        views.values.contains { $0.key.spec == spec && $0.isActive }
    }

    /// Adds a registration (creating the view with `state`) and sends it the initial events.
    mutating func register(_ key: TreeViewKey, state: @autoclosure () -> TreeViewState, kinds: Set<TreeEvent.Kind>,
                           output: AsyncStream<TreeListenerOutput>.Continuation) -> Int {
        let id = nextRegistrationID
        nextRegistrationID += 1
        var view = views[key] ?? TreeView(key: key, state: state())
        let registration = TreeRegistration(kinds: kinds, output: output)
        view.registrations[id] = registration
        views[key] = view
        send(view.state.initialEvents(key: key.path.last), to: registration)
        return id
    }

    /// Removes a registration; returns whether its view is gone (no listener, not kept synced).
    mutating func unregister(_ key: TreeViewKey, _ id: Int) -> Bool {
        guard var view = views[key], view.registrations.removeValue(forKey: id) != nil else { return false }
        if view.isActive {
            views[key] = view
            return false
        }
        views.removeValue(forKey: key)
        return true
    }

    /// Turns keepSynced on or off for `key`; returns whether the view exists afterwards.
    mutating func setKeptSynced(_ key: TreeViewKey, _ enabled: Bool, state: @autoclosure () -> TreeViewState) -> Bool {
        var view = views[key] ?? TreeView(key: key, state: state())
        view.keptSynced = enabled
        if view.isActive {
            views[key] = view
            return true
        }
        views.removeValue(forKey: key)
        return false
    }

    /// Moves `key`'s view to `state`, raising the events of the change.
    mutating func update(_ key: TreeViewKey, to state: TreeViewState) {
        guard var view = views[key], view.state != state else { return }
        let events = TreeEventGenerator.events(from: view.state, to: state, key: key.path.last)
        view.state = state
        views[key] = view
        guard !events.isEmpty else { return }
        for registration in view.registrations.sorted(by: { $0.key < $1.key }).map(\.value) { send(events, to: registration) }
    }

    private mutating func send(_ events: [TreeEvent], to registration: TreeRegistration) {
        let selected = events.filter { registration.kinds.contains($0.kind) }
        guard !selected.isEmpty else { return }
        registration.output.yield(.events(selected, firstID: eventCounter + 1))
        eventCounter += Int64(selected.count)
    }

    /// Sends `output` to every registration.
    func broadcast(_ output: TreeListenerOutput) {
        for view in views.values { for registration in view.registrations.values { registration.output.yield(output) } }
    }

    /// Ends every registration (with `error` first, if given) and forgets every view.
    mutating func endAll(with error: FiregateError?) {
        for view in views.values {
            for registration in view.registrations.values {
                if let error { registration.output.yield(.cancel(error)) }
                registration.output.finish()
            }
        }
        views.removeAll()
    }

    /// Ends the registrations of views on `spec` with a cancel event (a revoked listen).
    mutating func cancel(_ spec: TreeQuerySpec, with error: FiregateError) {
        for key in views.keys where key.spec == spec {
            for registration in views[key]!.registrations.values {
                registration.output.yield(.cancel(error))
                registration.output.finish()
            }
            views[key]?.registrations.removeAll()
            if views[key]?.isActive == false { views.removeValue(forKey: key) }
        }
    }
}
