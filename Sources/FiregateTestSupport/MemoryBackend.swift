import FiregateBackend
import FiregateStore

extension Backend {
    /// A backend that keeps nothing on disk, for tests: `project` is its default project and tree
    /// namespace; `extraMigrations` adds the tables of other targets (the edge clients' caches).
    public static func inMemory(project: String = "p", extraMigrations: [StoreMigration] = []) async throws -> Backend {
        try await Backend(directory: nil, defaultProject: project, extraMigrations: extraMigrations)
    }
}
