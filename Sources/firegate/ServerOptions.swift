import ArgumentParser
import FiregateBackend
import FiregateEdge
import FiregateHTTP
import FiregateModel
import FiregatePostgres
import Foundation
import Logging

/// The options every command that runs the server takes, each with its environment variable,
/// and the steps they share: open the store, import, load the rules; flush and export at the end.
struct ServerOptions: ParsableArguments {
    @Option(help: "Directory for the SQLite data (env FIREGATE_DATA_DIR; serve's default ./.firegate, exec keeps nothing without it).")
    var dataDir: String? = ProcessInfo.processInfo.environment["FIREGATE_DATA_DIR"]

    @Flag(help: "Keep nothing on disk (env FIREGATE_IN_MEMORY=1).")
    var inMemory: Bool = ["1", "true", "yes"].contains((ProcessInfo.processInfo.environment["FIREGATE_IN_MEMORY"] ?? "").lowercased())

    @Option(help: "postgresql://user@host:port/db or postgresql:///db?host=/socket/dir: keep documents and the tree in PostgreSQL (env FIREGATE_STORE).")
    var store: String? = ProcessInfo.processInfo.environment["FIREGATE_STORE"].flatMap { $0.isEmpty ? nil : $0 }

    @Option(help: "This replica's name on a shared PostgreSQL store (env FIREGATE_REPLICA_ID; default host:port).")
    var replicaID: String? = ProcessInfo.processInfo.environment["FIREGATE_REPLICA_ID"]

    @Option(help: "The URL other replicas reach this one at (env FIREGATE_ADVERTISE; default http://host:port).")
    var advertise: String? = ProcessInfo.processInfo.environment["FIREGATE_ADVERTISE"]

    @Option(help: "Seconds a replica owns a database or namespace without renewing (env FIREGATE_LEASE_SECONDS).")
    var leaseSeconds: Int = Int(ProcessInfo.processInfo.environment["FIREGATE_LEASE_SECONDS"] ?? "") ?? 10

    @Option(help: "What requests forwarded between replicas must carry; the same on every replica (env FIREGATE_CLUSTER_SECRET).")
    var clusterSecret: String? = ProcessInfo.processInfo.environment["FIREGATE_CLUSTER_SECRET"].flatMap { $0.isEmpty ? nil : $0 }

    @Option(name: [.customShort("P"), .long], help: "Project id, or an alias of .firebaserc with exec (env FIREGATE_PROJECT; serve's default demo-project).")
    var project: String? = ProcessInfo.processInfo.environment["FIREGATE_PROJECT"].flatMap { $0.isEmpty ? nil : $0 }

    @Option(help: "Seconds between keep-alive comments on event streams (env FIREGATE_KEEPALIVE_SECONDS).")
    var keepAliveSeconds: Double = Double(ProcessInfo.processInfo.environment["FIREGATE_KEEPALIVE_SECONDS"] ?? "") ?? 15

    @Option(help: "trace, debug, info, notice, warning, error or critical (env FIREGATE_LOG_LEVEL).")
    var logLevel: String = ProcessInfo.processInfo.environment["FIREGATE_LOG_LEVEL"] ?? "info"

    @Option(help: "text, or json for one JSON object per line (env FIREGATE_LOG_FORMAT).")
    var logFormat: String = ProcessInfo.processInfo.environment["FIREGATE_LOG_FORMAT"] ?? "text"

    @Option(help: "Folder of the dashboard served at / (env FIREGATE_PUBLIC_DIR; default: Public/ here or beside the binary).")
    var publicDir: String? = ProcessInfo.processInfo.environment["FIREGATE_PUBLIC_DIR"]

    @Option(help: "Token required on /emulator/* and client control routes (env FIREGATE_ADMIN_TOKEN).")
    var adminToken: String? = ProcessInfo.processInfo.environment["FIREGATE_ADMIN_TOKEN"]

    @Option(name: .customLong("tls-cert"), help: "PEM certificate chain: serve HTTPS (env FIREGATE_TLS_CERT).")
    var tlsCert: String? = ProcessInfo.processInfo.environment["FIREGATE_TLS_CERT"]

    @Option(name: .customLong("tls-key"), help: "PEM private key for --tls-cert (env FIREGATE_TLS_KEY).")
    var tlsKey: String? = ProcessInfo.processInfo.environment["FIREGATE_TLS_KEY"]

    @Option(name: .customLong("import"), help: "At start: an archive file (as POST /emulator/v1/import takes it) or the Firebase CLI's export directory (env FIREGATE_IMPORT).")
    var importPath: String? = ProcessInfo.processInfo.environment["FIREGATE_IMPORT"]

    @Option(name: .customLong("export-on-exit"), help: "On shutdown: serve writes an archive file (with clients), exec and emulators:start the CLI's export directory (env FIREGATE_EXPORT_ON_EXIT).")
    var exportOnExit: String? = ProcessInfo.processInfo.environment["FIREGATE_EXPORT_ON_EXIT"]

    @Option(name: .customLong("firestore-rules"), help: "Firestore rules file, watched and reloaded (env FIREGATE_FIRESTORE_RULES).")
    var firestoreRules: String? = ProcessInfo.processInfo.environment["FIREGATE_FIRESTORE_RULES"]

    @Option(name: .customLong("database-rules"), help: "Realtime Database rules file, PATH or NS=PATH; repeatable, watched and reloaded.")
    var databaseRules: [String] = []

    func validate() throws {
        guard keepAliveSeconds >= 0.01, keepAliveSeconds <= 3600 else { throw ValidationError("--keep-alive-seconds must be between 0.01 and 3600") }
        guard Logger.Level(rawValue: logLevel.lowercased()) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard ["text", "json"].contains(logFormat.lowercased()) else { throw ValidationError("--log-format must be text or json") }
        guard (tlsCert == nil) == (tlsKey == nil) else { throw ValidationError("--tls-cert and --tls-key go together") }
        if let adminToken, adminToken.isEmpty { throw ValidationError("--admin-token must not be empty") }
        if let store {
            guard !inMemory else { throw ValidationError("--store and --in-memory go apart: --in-memory keeps nothing, --store keeps it in PostgreSQL") }
            do { _ = try PostgresLocation(store) } catch { throw ValidationError(error.message) }
        }
        guard (2...3600).contains(leaseSeconds) else { throw ValidationError("--lease-seconds must be between 2 and 3600") }
    }

    var level: Logger.Level { Logger.Level(rawValue: logLevel.lowercased()) ?? .info }

    func bootstrapLogging() {
        AllocatorArenas.limit()
        let json = logFormat.lowercased() == "json"
        LoggingSystem.bootstrap { label in
            json ? JSONLogHandler(label: label) as any LogHandler : StreamLogHandler.standardError(label: label)
        }
    }

    /// The server's configuration; `dataDirectory` nil keeps nothing on disk.
    func configuration(host: String, port: Int, project: String, dataDirectory: String?) -> ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.dataDirectory = inMemory ? nil : dataDirectory.map { URL(fileURLWithPath: $0) }
        configuration.project = project
        configuration.logLevel = level
        configuration.listen.keepAliveSeconds = keepAliveSeconds
        configuration.publicDirectory = publicDir
        configuration.adminToken = adminToken
        configuration.tlsCertificatePath = tlsCert
        configuration.tlsKeyPath = tlsKey
        configuration.store = store
        configuration.replicaID = replicaID
        configuration.advertise = advertise
        configuration.leaseSeconds = leaseSeconds
        configuration.clusterSecret = clusterSecret
        return configuration
    }

    /// Opens the store, imports `--import`, loads the rules files (and starts watching them).
    func open(_ configuration: ServerConfiguration, firebaseJSON: String?, namespaceAliases: [String: String] = [:],
              databaseTargets: [String: [String]] = [:]) async throws -> OpenedServer {
        let backend: Backend
        do {
            backend = try await BackendOpening.open(configuration)
        } catch let error as FiregateError where store != nil {
            throw StartupFailure(description: "The PostgreSQL store could not be opened: \(error.message)")
        }
        for (alias, canonical) in namespaceAliases {
            backend.tree.alias(alias, to: canonical)
            backend.rules.alias(alias, to: canonical)
        }
        let clients = EdgeClients(backend: backend)
        var isFolder: ObjCBool = false
        if let importPath, FileManager.default.fileExists(atPath: importPath, isDirectory: &isFolder), isFolder.boolValue {
            do {
                try await FiregateServer.importExportDirectory(from: importPath, project: configuration.project, backend: backend, clients: clients)
            } catch let error as FiregateError {
                throw StartupFailure(description: "The import stopped, nothing was imported: \(error.message)")
            }
        } else if let importPath, importPath == exportOnExit, !FileManager.default.fileExists(atPath: importPath) {
            // The CLI's first-run convenience: `--import X --export-on-exit X` before X exists.
        } else if let importPath {
            try await FiregateServer.importArchive(from: importPath, backend: backend, clients: clients)
        }
        let rulesFiles: RulesFiles
        do {
            rulesFiles = try RulesFiles(rules: backend.rules, firestoreRules: firestoreRules, databaseRules: databaseRules, firebaseJSON: firebaseJSON,
                                        databaseTargets: databaseTargets)
            try rulesFiles.loadAll()
        } catch {
            throw StartupFailure(description: error.message)
        }
        return OpenedServer(backend: backend, clients: clients, rulesWatcher: rulesFiles.sources.isEmpty ? nil : rulesFiles.watch())
    }

    /// After the servers stopped: lets queued cache writes land, and writes `--export-on-exit` —
    /// the CLI's export directory of `project` when `directory` (or when the path is a folder
    /// already), else Firegate's archive file.
    func close(_ opened: OpenedServer, directoryOf project: String? = nil) async throws {
        opened.rulesWatcher?.cancel()
        try? await opened.backend.edgeStore.flush()
        guard let exportOnExit else { return }
        var isFolder: ObjCBool = false
        let folder = FileManager.default.fileExists(atPath: exportOnExit, isDirectory: &isFolder) && isFolder.boolValue
        if let project = project ?? (folder ? opened.backend.defaultProject : nil) {
            try await FiregateServer.writeExportDirectory(to: exportOnExit, project: project, backend: opened.backend)
        } else {
            try await FiregateServer.exportArchive(to: exportOnExit, backend: opened.backend, clients: opened.clients)
        }
    }
}

/// A backend opened for serving, with what runs beside it.
struct OpenedServer: Sendable {
    let backend: Backend
    let clients: EdgeClients
    let rulesWatcher: Task<Void, Never>?

    /// Waits for the stored documents; a failed load stops the start.
    func loaded() async throws {
        do {
            try await backend.documents.loaded()
            // What parsing the stored data left free goes back to the system.
            AllocatorArenas.releaseFreeMemory()
        } catch {
            throw StartupFailure(description: "The stored documents could not be loaded: \(error)")
        }
    }
}
