import FiregateBackend
import FiregateModel
import Synchronization

/// One web persistence shared by browser tabs (`sharedWith`): the cache, targets and mutation
/// queue live once, in `engine`, and every tab's listeners and writes use them. The tab that
/// holds the primary lease owns the network: the engine is online exactly while a primary tab
/// exists with its network enabled, so a secondary's writes wait for a primary to send them
/// and its listeners see the primary's online state, as in the web SDK's multi-tab mode.
public final class SharedPersistence: Sendable {
    private struct State {
        var lease = PrimaryLease()
        /// Each open tab's manager (every tab of a persistence names its own).
        var managers: [String: TabManager] = [:]
        var refresher: Task<Void, Never>?
        /// The primary of the last decision, and that decision's number.
        var networkOwner: String?
        var generation: UInt64 = 0
        /// What the watch stream of each tab that lost the lease without knowing it asked for
        /// when it lost it: that tab still believes the stream is its own.
        var staleWatch: [String: JSON] = [:]
        /// Each tab's signed-in user (`PUT …/auth` through the tab); absent: signed out.
        var auths: [String: JSON] = [:]
        /// Each tab's injected persistence failures, and what they hold until a retry:
        /// views that could not read other tabs' changes, the write outcomes it could not
        /// read (the batches pending then, and any newer), a failed move to primary.
        var faults: [String: TabStorageFaults] = [:]
        var heldViews: Set<String> = []
        var heldWrites: [String: (pending: Set<Int64>, nextID: Int64)] = [:]
        var failedTransitions: Set<String> = []
        /// Tabs the browser froze (Page Lifecycle): their timers and views stand still, so
        /// their lease and metadata age until they resume.
        var frozenTabs: Set<String> = []

        /// A tab's refresh with its faults: a failing refresh changes nothing; one that would
        /// make it primary while its transition fails leaves it secondary until a retry.
        mutating func refresh(_ tab: String, at now: Int64) {
            let faults = self.faults[tab] ?? TabStorageFaults()
            guard !faults.fails(.refreshLease), !frozenTabs.contains(tab) else { return }
            let wasHolder = lease.holder?.tabID == tab
            let eligible = lease.refresh(tab, at: now, mayTakeLease: !faults.failsPrimaryTransition)
            if eligible && !wasHolder && faults.failsPrimaryTransition { failedTransitions.insert(tab) }
        }
    }

    public let key: String
    /// The shared cache, targets, queue, listeners and network connection.
    public let engine: EdgeClient
    private let clock: ServerClock
    private let state = Mutex(State())

    init(key: String, engine: EdgeClient, clock: ServerClock) {
        self.key = key
        self.engine = engine
        self.clock = clock
    }

    /// A tab opens: it writes its metadata and tries for the lease. A tab without multi-tab
    /// synchronization fails when another tab is open, as does any tab while a single-tab
    /// client holds the persistence.
    func open(_ tab: String, _ request: TabRequest) async throws(FiregateError) {
        let now = clock.nowMicros()
        await engine.setTabUser(tab, "")
        try state.withLock { (state) throws(FiregateError) in
            let others = state.lease.tabs.filter { $0.id != tab }
            if !others.isEmpty {
                if others.contains(where: { state.managers[$0.id] == .single }) {
                    throw .clientState(SharedPersistence.exclusiveMessage)
                }
                if request.manager == .single { throw .clientState(SharedPersistence.leaseLostMessage) }
            }
            state.managers[tab] = request.manager
            state.auths[tab] = nil
            state.lease.open(tab, visible: request.visible, at: now)
            if state.refresher == nil { state.refresher = startRefresher() }
        }
        await applyNetwork()
    }

    /// A tab closes (shutdown, terminate or DELETE): its listeners end and the lease, if it
    /// held it, is free for the next tab that refreshes.
    func close(_ tab: String) async {
        let wasOpen = state.withLock { state -> Bool in
            guard state.lease.tab(tab) != nil else { return false }
            state.lease.close(tab)
            state.managers[tab] = nil
            if state.lease.tabs.isEmpty {
                state.refresher?.cancel()
                state.refresher = nil
            }
            return true
        }
        guard wasOpen else { return }
        state.withLock { state in
            state.auths[tab] = nil
            state.faults[tab] = nil
            state.heldViews.remove(tab)
            state.heldWrites[tab] = nil
            state.failedTransitions.remove(tab)
            state.frozenTabs.remove(tab)
        }
        await engine.endListeners(ownedBy: tab)
        await applyNetwork()
    }

    /// The tab signs in (or out): its views show its user's queued writes and its writes join
    /// that queue; the primary's user is the one whose writes are sent.
    public func setAuth(_ tab: String, _ json: JSON) async throws(FiregateError) -> JSON {
        let parsed = try ClientAuth.parse(json)
        state.withLock { $0.auths[tab] = parsed == nil ? nil : json }
        await engine.setTabUser(tab, parsed?.uid ?? "")
        if isPrimary(tab) { return try await engine.setAuth(json) }
        return parsed.map { $0.json.withMember("writesPaused", false) } ?? ["uid": .null, "writesPaused": false]
    }

    public func auth(_ tab: String) async -> JSON {
        if isPrimary(tab) { return await engine.authJSON }
        let json = state.withLock { $0.auths[tab] }
        return json.flatMap { try? ClientAuth.parse($0) }.map { $0.json.withMember("writesPaused", false) } ?? ["uid": .null, "writesPaused": false]
    }

    /// `PUT /clients/{tab}/faults`: the tab's own transactions fail; the engine's ones too
    /// while it is primary. Views that can no longer read other tabs' changes wait.
    public func setFaults(_ tab: String, _ json: JSON) async throws(FiregateError) -> JSON {
        var faults = state.withLock { $0.faults[tab] ?? TabStorageFaults() }
        try faults.update(json)
        let (pending, nextID) = await engine.batchIDs()
        state.withLock { state in
            state.faults[tab] = faults
            if faults.holdsViews { state.heldViews.insert(tab) }
            if faults.fails(.lookupMutationDocuments), state.heldWrites[tab] == nil { state.heldWrites[tab] = (pending, nextID) }
        }
        await engine.setFaults(faults.engine, ofTab: tab)
        await applyNetwork()
        return faults.json
    }

    public func faultsJSON(_ tab: String) -> JSON { state.withLock { ($0.faults[tab] ?? TabStorageFaults()).json } }

    /// The tab's `async_queue_retry`: what its healed faults held goes on — its views catch
    /// up, write outcomes show, a failed move to primary is tried again. True if anything ran.
    public func retry(_ tab: String) async -> Bool {
        let now = clock.nowMicros()
        let ran = state.withLock { state -> Bool in
            let faults = state.faults[tab] ?? TabStorageFaults()
            var ran = false
            if state.heldViews.contains(tab), !faults.holdsViews {
                state.heldViews.remove(tab)
                state.heldWrites[tab] = nil
                ran = true
            }
            if state.failedTransitions.contains(tab), !faults.failsPrimaryTransition {
                state.failedTransitions.remove(tab)
                state.refresh(tab, at: now)
                ran = true
            }
            return ran
        }
        await applyNetwork()
        return ran
    }

    /// Whether the tab still shows write `id` as pending: it could not read its outcome.
    public func holdsWrite(_ tab: String, _ id: Int64) -> Bool {
        state.withLock { state in
            guard let held = state.heldWrites[tab] else { return false }
            return held.pending.contains(id) || id >= held.nextID
        }
    }

    public func setVisibility(_ tab: String, visible: Bool) async {
        state.withLock { $0.lease.update(tab, visible: visible) }
        await refresh(tab)
    }

    /// The tab's `enableNetwork()`/`disableNetwork()`: the primary's reaches the engine (and
    /// so every tab's online state) first; then the tab refreshes its lease.
    public func setNetwork(_ tab: String, enabled: Bool) async {
        state.withLock { $0.lease.update(tab, networkEnabled: enabled) }
        await applyNetwork()
        await refresh(tab)
    }

    /// The browser freezes the tab (`frozen`) or resumes it: a frozen tab neither refreshes its
    /// lease nor updates its views; once resumed it refreshes at once and its views catch up.
    /// A frozen primary's lease expires 5 s (server clock) after its last refresh, and the
    /// next tab to refresh takes it.
    public func setFrozen(_ tab: String, _ frozen: Bool) async {
        let now = clock.nowMicros()
        state.withLock { state in
            guard state.lease.tab(tab) != nil else { return }
            if frozen {
                state.frozenTabs.insert(tab)
            } else if state.frozenTabs.remove(tab) != nil {
                state.refresh(tab, at: now)
            }
        }
        await applyNetwork()
    }

    /// The tab's `client_metadata_refresh` timer, run now.
    public func refresh(_ tab: String) async {
        let now = clock.nowMicros()
        state.withLock { $0.refresh(tab, at: now) }
        await applyNetwork()
    }

    /// Clears the lease and lets the tab refresh at once (a test's hook; `PrimaryLease.claim`).
    public func claimPrimary(_ tab: String) async {
        let now = clock.nowMicros()
        state.withLock { $0.lease.claim(tab, at: now) }
        await applyNetwork()
    }

    /// Tells the engine what the tabs decided, as one numbered snapshot it applies at once
    /// (`TabDecision`): the primary, its network and user, the views that wait, the faults.
    /// The engine's network follows the primary tab's; between primaries its streams pause.
    private func applyNetwork() async {
        let now = clock.nowMicros()
        let (decision, stale) = state.withLock { state -> (TabDecision, Set<String>) in
            state.generation += 1
            let primary = state.lease.primary(at: now)
            state.networkOwner = primary
            let stale = Set(state.lease.stalePrimaries(at: now))
            let decision = TabDecision(
                generation: state.generation, primary: primary,
                primaryNetworkEnabled: primary.flatMap { state.lease.tab($0)?.networkEnabled } ?? false,
                primaryAuth: primary.flatMap { state.auths[$0] },
                frozenTabs: stale.union(state.heldViews).union(state.frozenTabs),
                faults: state.faults.mapValues(\.engine))
            return (decision, stale)
        }
        guard let streamBefore = await engine.applyTabDecision(decision) else { return }
        // A tab that just lost the lease without knowing it keeps the stream it had.
        state.withLock { state in
            guard state.generation == decision.generation else { return }
            for tab in stale where state.staleWatch[tab] == nil { state.staleWatch[tab] = streamBefore }
            for tab in state.staleWatch.keys where !stale.contains(tab) { state.staleWatch[tab] = nil }
        }
    }

    /// Whether `tab` holds the lease now: only the primary's streams carry watch messages and
    /// write answers.
    public func isPrimary(_ tab: String) -> Bool {
        let now = clock.nowMicros()
        return state.withLock { $0.lease.primary(at: now) == tab }
    }

    /// Every open tab refreshes on the SDK's interval, on the server clock (so advancing the
    /// clock runs the refreshes a wait would).
    private func startRefresher() -> Task<Void, Never> {
        Task { [weak self, clock] in
            var due = clock.nowMicros() + PrimaryLease.refreshIntervalMicros
            while !Task.isCancelled {
                await clock.sleep(untilMicros: due)
                guard !Task.isCancelled, let self else { return }
                let now = clock.nowMicros()
                self.state.withLock { state in
                    for tab in state.lease.tabs { state.refresh(tab.id, at: now) }
                }
                await self.applyNetwork()
                due = now + PrimaryLease.refreshIntervalMicros
            }
        }
    }

    /// The watch stream a tab that lost the lease without knowing it still believes it has.
    public func staleWatch(_ tab: String) -> JSON? { state.withLock { $0.staleWatch[tab] } }

    /// The tab's part of its client state.
    public func tabState(_ tab: String) -> JSON {
        let now = clock.nowMicros()
        return state.withLock { state in
            let me = state.lease.tab(tab)
            let primary = state.lease.primary(at: now)
            return [
                "sharedWith": .string(key),
                "open": .bool(me != nil),
                "tabManager": .string((state.managers[tab] ?? .multiple).rawValue),
                "primary": .bool(me?.actsAsPrimary ?? false),
                "primaryTab": primary.map(JSON.string) ?? .null,
                "visible": .bool(me?.visible ?? false),
                "networkEnabled": .bool(me?.networkEnabled ?? false),
                "activeTabs": .int(Int64(state.lease.activeTabs(at: now).count)),
                "frozen": .bool(state.frozenTabs.contains(tab)),
            ]
        }
    }

    deinit {
        state.withLock { $0.refresher?.cancel() }
    }
}
