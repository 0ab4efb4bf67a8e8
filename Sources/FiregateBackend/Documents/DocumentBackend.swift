import FiregateModel
import FiregateStore

/// The Firestore-style document databases, one per project and database id.
public final class DocumentBackend: Sendable {
    public static let migrations: [StoreMigration] = []

    public init(store: SQLiteStore, clock: ServerClock) async throws {}
}
