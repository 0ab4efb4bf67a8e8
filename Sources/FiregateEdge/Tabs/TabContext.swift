/// What the engine of a shared web persistence knows of its tabs: which one is primary, each
/// one's user, failing transactions and waiting views, and the state of the primary's term.
/// A value the engine owns; `SharedPersistence` changes it only through a `TabDecision`.
struct TabContext {
    /// The newest `TabDecision` applied.
    var appliedGeneration: UInt64 = 0
    /// The primary tab (whose failing transactions are the engine's `faults`).
    var primary: String?
    /// Tabs whose views wait (stale primaries, frozen tabs, tabs that cannot read changes).
    var frozen: Set<String> = []
    /// The user each tab is signed in as; the engine's own `auth` is the primary's.
    var users: [String: String] = [:]
    /// The other tabs' failing transactions.
    var faults: [String: StorageFaults] = [:]
    /// Other tabs' queries the primary could not yet take up or let go of on watch because
    /// its storage failed (retried with it).
    var deferredListens: Set<String> = []
    var deferredUnlistens: Set<String> = []
    /// Since a new primary took over: the targets its stream has said are current, the only
    /// ones whose limbo documents it looks up. Nil on a client of its own persistence.
    var limboTrackedTargets: Set<Int>?
    /// Each tab's next limbo lookup target id (its sync engine's generator goes on where it
    /// stopped when the tab is primary again).
    var limboNextTargetIDs: [String: Int] = [:]
    /// The resume token each query target was first asked for with in this term: what a tab
    /// that lost the lease without knowing it asks for when it learns of the target.
    var termFirstRequests: [Int: String] = [:]
}
