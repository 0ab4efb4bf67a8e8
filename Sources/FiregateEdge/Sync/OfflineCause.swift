/// Why the client's streams are closed while its network switch is on, as remote_store.ts
/// keeps them: the streams may run only when there is no cause at all.
enum OfflineCause: Hashable {
    /// A local persistence operation failed; watch and writes wait for its retry to succeed
    /// (disableNetworkUntilRecovery).
    case storageFailure
    /// A shared persistence between primaries: no tab holds the lease, so none runs the streams.
    case noPrimaryTab
}
