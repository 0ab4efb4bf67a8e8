import ArgumentParser
import FiregateBackend
import FiregateEdge
import FiregateHTTP
import FiregateModel
import FiregatePostgres
import Foundation
import Logging

/// `firegate` / `firegate serve`: run the server.
@main
struct Firegate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "firegate",
        abstract: "A Firebase-style backend emulator with offline-capable edge clients.",
        subcommands: [Serve.self],
        defaultSubcommand: Serve.self
    )
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the server (the default command).")

    @Option(help: "Address to listen on (env FIREGATE_HOST).")
    var host: String = ProcessInfo.processInfo.environment["FIREGATE_HOST"] ?? "127.0.0.1"

    @Option(help: "Port to listen on (env FIREGATE_PORT).")
    var port: Int = Int(ProcessInfo.processInfo.environment["FIREGATE_PORT"] ?? "") ?? 8080

    @Option(help: "Directory for the SQLite data (env FIREGATE_DATA_DIR).")
    var dataDir: String = ProcessInfo.processInfo.environment["FIREGATE_DATA_DIR"] ?? "./.firegate"

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

    @Option(help: "Default project id and tree namespace (env FIREGATE_PROJECT).")
    var project: String = ProcessInfo.processInfo.environment["FIREGATE_PROJECT"] ?? "demo-project"

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

    @Option(name: .customLong("import"), help: "Archive to import at start, as POST /emulator/v1/import takes it (env FIREGATE_IMPORT).")
    var importPath: String? = ProcessInfo.processInfo.environment["FIREGATE_IMPORT"]

    @Option(name: .customLong("export-on-exit"), help: "Where to write an export archive (with clients) on shutdown (env FIREGATE_EXPORT_ON_EXIT).")
    var exportOnExit: String? = ProcessInfo.processInfo.environment["FIREGATE_EXPORT_ON_EXIT"]

    @Option(name: .customLong("firestore-rules"), help: "Firestore rules file, watched and reloaded (env FIREGATE_FIRESTORE_RULES).")
    var firestoreRules: String? = ProcessInfo.processInfo.environment["FIREGATE_FIRESTORE_RULES"]

    @Option(name: .customLong("database-rules"), help: "Realtime Database rules file, PATH or NS=PATH; repeatable, watched and reloaded.")
    var databaseRules: [String] = []

    @Option(name: .customLong("firebase-json"), help: "firebase.json whose firestore.rules and database.rules are loaded and watched (env FIREGATE_FIREBASE_JSON).")
    var firebaseJSON: String? = ProcessInfo.processInfo.environment["FIREGATE_FIREBASE_JSON"]

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
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

    func run() async throws {
        AllocatorArenas.limit()
        let json = logFormat.lowercased() == "json"
        LoggingSystem.bootstrap { label in
            json ? JSONLogHandler(label: label) as any LogHandler : StreamLogHandler.standardError(label: label)
        }
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.dataDirectory = inMemory ? nil : URL(fileURLWithPath: dataDir)
        configuration.project = project
        configuration.logLevel = Logger.Level(rawValue: logLevel.lowercased()) ?? .info
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
        let backend: Backend
        do {
            backend = try await FiregateServer.openBackend(configuration)
        } catch let error as FiregateError where store != nil {
            throw StartupFailure(description: "The PostgreSQL store could not be opened: \(error.message)")
        }
        let clients = EdgeClients(backend: backend)
        if let importPath {
            try await FiregateServer.importArchive(from: importPath, backend: backend, clients: clients)
        }
        let rulesFiles: RulesFiles
        do {
            rulesFiles = try RulesFiles(rules: backend.rules, firestoreRules: firestoreRules, databaseRules: databaseRules, firebaseJSON: firebaseJSON)
            try rulesFiles.loadAll()
        } catch {
            throw StartupFailure(description: error.message)
        }
        let watcher = rulesFiles.sources.isEmpty ? nil : rulesFiles.watch()
        defer { watcher?.cancel() }
        let app = try FiregateServer.makeApplication(configuration: configuration, backend: backend, clients: clients)
        // The server runs while the stored documents load; a failed load stops it.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            group.addTask {
                do {
                    try await backend.documents.loaded()
                    // What parsing the stored data left free goes back to the system.
                    AllocatorArenas.releaseFreeMemory()
                } catch {
                    throw StartupFailure(description: "The stored documents could not be loaded: \(error)")
                }
            }
            while try await group.next() != nil {}
        }
        // Cache writes of persistent edge clients are queued without waiting: let them land.
        try? await backend.edgeStore.flush()
        if let exportOnExit {
            try await FiregateServer.exportArchive(to: exportOnExit, backend: backend, clients: clients)
        }
    }
}

/// Why the server stopped during its start (printed as `Error: …`).
struct StartupFailure: Error, CustomStringConvertible {
    let description: String
}
