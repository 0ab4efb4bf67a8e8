import Foundation
import GRDB

/// The embedded SQLite database every backend and edge client persists into.
///
/// On disk it is one WAL-mode file with `synchronous=FULL`, so a committed transaction
/// survives `kill -9` and power loss; `inMemory` keeps nothing. Schema comes from the
/// `StoreMigrations` each component registers before `open`.
public final class SQLiteStore: Sendable {
    /// The GRDB writer: a pool (concurrent readers, WAL) on disk, a queue in memory.
    public let writer: any DatabaseWriter
    /// Batches durable writes from many callers into one transaction and one fsync.
    public let committer: GroupCommitter
    /// The directory holding the database, or nil in memory.
    public let directory: URL?

    public init(directory: URL?, migrations: [StoreMigration]) throws {
        var configuration = Configuration()
        // Wait for a briefly held lock (another connection closing, checkpointing or inspecting
        // the file) instead of failing at once with SQLITE_BUSY.
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        if let directory {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let pool = try DatabasePool(path: directory.appendingPathComponent("firegate.sqlite").path, configuration: configuration)
            // GRDB's WAL setup sets synchronous=NORMAL after prepareDatabase ran: make it FULL again.
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            writer = pool
        } else {
            writer = try DatabaseQueue(configuration: configuration)
        }
        self.directory = directory
        var migrator = DatabaseMigrator()
        for migration in migrations {
            migrator.registerMigration(migration.identifier, migrate: migration.migrate)
        }
        try migrator.migrate(writer)
        committer = GroupCommitter(writer: writer)
    }

    /// A store that keeps nothing, for tests and `--in-memory`.
    public static func inMemory(migrations: [StoreMigration]) throws -> SQLiteStore {
        try SQLiteStore(directory: nil, migrations: migrations)
    }
}

/// One named schema step; identifiers are stable forever once released.
public struct StoreMigration: Sendable {
    public let identifier: String
    public let migrate: @Sendable (Database) throws -> Void

    public init(_ identifier: String, migrate: @escaping @Sendable (Database) throws -> Void) {
        self.identifier = identifier
        self.migrate = migrate
    }
}
