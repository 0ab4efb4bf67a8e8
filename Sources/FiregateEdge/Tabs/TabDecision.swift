import FiregateModel

/// What the tabs of a shared persistence decide for its engine after any change (a refresh, a
/// tab opening or closing, a network or visibility switch, faults): a whole snapshot, numbered,
/// that the engine applies in one step and only if it is newer than the last it applied, so
/// decisions racing to the engine can never leave it in an older state.
struct TabDecision: Sendable {
    let generation: UInt64
    /// The tab holding a valid lease; nil between primaries.
    let primary: String?
    /// Whether the primary's own network switch is on.
    let primaryNetworkEnabled: Bool
    /// The primary's signed-in user (its `PUT …/auth` body; nil: signed out).
    let primaryAuth: JSON?
    /// Tabs whose views wait: stale primaries, frozen tabs, tabs that cannot read changes.
    let frozenTabs: Set<String>
    /// Each tab's failing engine transactions (the primary's are the engine's own).
    let faults: [String: StorageFaults]
}
