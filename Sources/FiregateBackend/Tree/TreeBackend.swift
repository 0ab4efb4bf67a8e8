import FiregateModel
import FiregateStore

/// The Realtime-Database-style JSON tree, one per namespace.
public final class TreeBackend: Sendable {
    public static let migrations: [StoreMigration] = []

    public init(store: SQLiteStore, clock: ServerClock) async throws {}
}
