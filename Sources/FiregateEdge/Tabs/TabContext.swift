/// What the engine of a shared web persistence knows of its tabs: which one is primary, each
/// one's user, failing transactions and waiting views, and the state of the primary's term.
/// A value the engine owns, changed only through the verbs below: `apply` takes a whole
/// `TabDecision`; the others record what a tab or the primary's stream did.
struct TabContext {
    /// The newest `TabDecision` applied.
    private(set) var appliedGeneration: UInt64 = 0
    /// The primary tab (whose failing transactions are the engine's `faults`).
    private(set) var primary: String?
    /// Tabs whose views wait (stale primaries, frozen tabs, tabs that cannot read changes).
    private(set) var frozen: Set<String> = []
    /// The user each tab is signed in as; the engine's own `auth` is the primary's.
    private(set) var users: [String: String] = [:]
    /// The other tabs' failing transactions.
    private(set) var faults: [String: StorageFaults] = [:]
    /// Other tabs' queries the primary could not yet take up or let go of on watch because
    /// its storage failed (retried with it).
    private(set) var deferredListens: Set<String> = []
    private(set) var deferredUnlistens: Set<String> = []
    /// Since a new primary took over: the targets its stream has said are current, the only
    /// ones whose limbo documents it looks up. Nil on a client of its own persistence.
    private(set) var limboTrackedTargets: Set<Int>?
    /// Each tab's next limbo lookup target id (its sync engine's generator goes on where it
    /// stopped when the tab is primary again).
    private(set) var limboNextTargetIDs: [String: Int] = [:]
    /// The resume token each query target was first asked for with in this term: what a tab
    /// that lost the lease without knowing it asks for when it learns of the target.
    private(set) var termFirstRequests: [Int: String] = [:]

    /// Takes `decision`'s primary and faults if it is newer than the last one applied. False
    /// for an outdated decision (nothing changes).
    mutating func apply(_ decision: TabDecision) -> Bool {
        guard decision.generation > appliedGeneration else { return false }
        appliedGeneration = decision.generation
        primary = decision.primary
        faults = decision.faults
        return true
    }

    /// A new primary's term: the old primary's limbo id generator is kept for its next term
    /// (`nextTargetID`: where it stopped); no target is tracked or asked for yet. Returns where
    /// the new primary's generator starts.
    mutating func beginTerm(of newPrimary: String?, after oldPrimary: String?, oldNextTargetID: Int) -> Int {
        if let oldPrimary { limboNextTargetIDs[oldPrimary] = oldNextTargetID }
        limboTrackedTargets = []
        termFirstRequests = [:]
        return newPrimary.flatMap { limboNextTargetIDs[$0] } ?? 1
    }

    /// The tab's views wait (or catch up). False when that was already so.
    mutating func setFrozen(_ tab: String, _ isFrozen: Bool) -> Bool {
        isFrozen ? frozen.insert(tab).inserted : frozen.remove(tab) != nil
    }

    /// The tab signs in as `user` (nil: it closed). False when it already was.
    mutating func setUser(_ tab: String, _ user: String?) -> Bool {
        guard users[tab] != user else { return false }
        users[tab] = user
        return true
    }

    mutating func setFaults(_ tabFaults: StorageFaults, ofTab tab: String) {
        faults[tab] = tabFaults
    }

    /// The tab closed: nothing of it is kept.
    mutating func removeTab(_ tab: String) {
        frozen.remove(tab)
        users[tab] = nil
        faults[tab] = nil
    }

    mutating func deferListen(_ queryID: String) { deferredListens.insert(queryID) }
    mutating func deferUnlisten(_ queryID: String) { deferredUnlistens.insert(queryID) }

    /// The deferred listens, handed over for a retry.
    mutating func takeDeferredListens() -> Set<String> {
        defer { deferredListens = [] }
        return deferredListens
    }

    mutating func takeDeferredUnlistens() -> Set<String> {
        defer { deferredUnlistens = [] }
        return deferredUnlistens
    }

    /// The primary's stream said the target is current: its limbo documents are looked up.
    mutating func trackLimbo(of targetID: Int) {
        limboTrackedTargets?.insert(targetID)
    }

    /// The stream asks for a query target: the first token it asks with in this term is kept.
    mutating func noteRequest(_ targetID: Int, resumeToken: String) {
        if termFirstRequests[targetID] == nil { termFirstRequests[targetID] = resumeToken }
    }
}
