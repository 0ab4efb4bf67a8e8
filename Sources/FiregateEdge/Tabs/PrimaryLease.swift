/// The tabs of one shared web persistence and which of them holds the primary lease: the web
/// SDK's client metadata and primary-client records (IndexedDbPersistence), with its rules for
/// who may act as primary (`canActAsPrimary`). A value: `SharedPersistence` owns it and runs
/// its refreshes on the server clock.
public struct PrimaryLease: Sendable, Equatable {
    /// How often each tab refreshes its metadata and tries for the lease (CLIENT_METADATA_REFRESH_INTERVAL_MS).
    public static let refreshIntervalMicros: Int64 = 4_000_000
    /// A lease or a tab's metadata older than this no longer counts (MAX_PRIMARY_ELIGIBLE_AGE_MS;
    /// MAX_CLIENT_AGE_MS is the same for listing active tabs).
    public static let maxEligibleAgeMicros: Int64 = 5_000_000

    /// One tab's metadata row.
    public struct Tab: Sendable, Equatable {
        public let id: String
        public var visible: Bool
        public var networkEnabled: Bool
        public var refreshedMicros: Int64
        /// What the tab made of its last refresh: it acts as primary until the next one shows
        /// it lost the lease (the SDK's `isPrimary`).
        public var actsAsPrimary = false
    }

    /// The primary-client record: its owner and when the owner last refreshed it.
    public struct Holder: Sendable, Equatable {
        public var tabID: String
        public var leaseMicros: Int64
    }

    /// Open tabs, in the order they opened.
    public private(set) var tabs: [Tab] = []
    public private(set) var holder: Holder?

    public init() {}

    public func tab(_ id: String) -> Tab? { tabs.first { $0.id == id } }

    /// The tab that holds a lease still valid at `now`, if any.
    public func primary(at now: Int64) -> String? {
        guard let holder, now - holder.leaseMicros <= PrimaryLease.maxEligibleAgeMicros, tab(holder.tabID) != nil else { return nil }
        return holder.tabID
    }

    /// Tabs that act as primary without holding the lease: they have not refreshed since
    /// another tab took it.
    public func stalePrimaries(at now: Int64) -> [String] {
        let current = primary(at: now)
        return tabs.filter { $0.actsAsPrimary && $0.id != current }.map(\.id)
    }

    /// Tabs whose metadata is recent enough to count as alive (the SDK's `filterActiveClients`).
    public func activeTabs(at now: Int64) -> [Tab] {
        tabs.filter { now - $0.refreshedMicros <= PrimaryLease.maxEligibleAgeMicros }
    }

    /// A tab starts: it writes its metadata, then tries for the lease.
    public mutating func open(_ id: String, visible: Bool, at now: Int64) {
        if let index = tabs.firstIndex(where: { $0.id == id }) { tabs.remove(at: index) }
        tabs.append(Tab(id: id, visible: visible, networkEnabled: true, refreshedMicros: now))
        refresh(id, at: now)
    }

    /// A tab shuts down: its metadata goes, and so does the lease if it held it.
    public mutating func close(_ id: String) {
        tabs.removeAll { $0.id == id }
        if holder?.tabID == id { holder = nil }
    }

    /// The visibility or network of a tab changed (the SDK then refreshes the tab at once).
    public mutating func update(_ id: String, visible: Bool? = nil, networkEnabled: Bool? = nil) {
        guard let index = tabs.firstIndex(where: { $0.id == id }) else { return }
        if let visible { tabs[index].visible = visible }
        if let networkEnabled { tabs[index].networkEnabled = networkEnabled }
    }

    /// The tab's metadata refresh (`updateClientMetadataAndTryBecomePrimary`): it records that it
    /// is alive, then takes or renews the lease if it may act as primary, or releases it if it
    /// held it and may not. A tab that cannot become primary now (`mayTakeLease` false: its
    /// transition would fail) does not take a lease it does not hold. True when the tab may act
    /// as primary by the rules.
    @discardableResult
    public mutating func refresh(_ id: String, at now: Int64, mayTakeLease: Bool = true) -> Bool {
        guard let index = tabs.firstIndex(where: { $0.id == id }) else { return false }
        tabs[index].refreshedMicros = now
        let eligible = canActAsPrimary(tabs[index], at: now)
        if eligible, mayTakeLease || holder?.tabID == id {
            holder = Holder(tabID: id, leaseMicros: now)
        } else if holder?.tabID == id {
            holder = nil
        }
        tabs[index].actsAsPrimary = holder?.tabID == id
        return eligible
    }

    /// A test takes the lease from its holder and lets this tab refresh at once (the spec's
    /// `applyClientState {primary: true}`: clearCurrentPrimaryLease, then this tab's refresh).
    /// It becomes primary unless a better-placed tab exists.
    public mutating func claim(_ id: String, at now: Int64) {
        guard tab(id) != nil else { return }
        holder = nil
        refresh(id, at: now)
    }

    /// A tab may hold the lease when the current lease is its own and its network is on, or
    /// nobody holds a valid one and no other live tab is better placed: one with its network
    /// on when this one's is off, or in the foreground when this one is not (same network).
    func canActAsPrimary(_ me: Tab, at now: Int64) -> Bool {
        if let current = primary(at: now) {
            if current == me.id && me.networkEnabled { return true }
            if current != me.id { return false }
        }
        if me.networkEnabled && me.visible { return true }
        let preferred = activeTabs(at: now).first { other in
            guard other.id != me.id else { return false }
            let betterNetwork = !me.networkEnabled && other.networkEnabled
            let betterVisibility = !me.visible && other.visible
            return betterNetwork || (betterVisibility && me.networkEnabled == other.networkEnabled)
        }
        return preferred == nil
    }
}
