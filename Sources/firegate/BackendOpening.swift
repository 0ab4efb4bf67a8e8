import FiregateBackend
import FiregateEdge
import FiregateHTTP
import FiregatePostgres

/// Which store the backend keeps its data in, chosen here so that the HTTP target does not
/// depend on PostgreSQL: SQLite under the data directory (or nothing, in memory), or PostgreSQL
/// with `--store` (docs/replicas.md).
enum BackendOpening {
    /// Opens the backend (and the edge clients' tables) as configured. The stored documents
    /// load in the background: the server answers at once, and document requests wait for
    /// the load (`DocumentBackend.loaded()` says when it is done or failed).
    static func open(_ configuration: ServerConfiguration) async throws -> Backend {
        guard let url = configuration.store else {
            return try await Backend(directory: configuration.dataDirectory, defaultProject: configuration.project,
                                     extraMigrations: EdgeClients.migrations, loadInBackground: true)
        }
        let postgres = try PostgresStore(location: try PostgresLocation(url),
                                         replicaID: configuration.replicaID ?? "\(configuration.host):\(configuration.port)",
                                         address: configuration.advertise ?? "http://\(configuration.host):\(configuration.port)",
                                         leaseSeconds: configuration.leaseSeconds)
        return try await Backend(directory: configuration.dataDirectory, defaultProject: configuration.project,
                                 extraMigrations: EdgeClients.migrations, loadInBackground: true,
                                 documentStorage: PostgresDocumentStorage(store: postgres), treeStorage: PostgresTreeStorage(store: postgres),
                                 edgeStore: postgres, replicas: postgres)
    }
}
