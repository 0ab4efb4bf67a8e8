import ArgumentParser
import FiregateHTTP
import Foundation

/// `firegate serve`: every surface on one port until SIGINT or SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the server (the default command).")

    @Option(help: "Address to listen on (env FIREGATE_HOST).")
    var host: String = ProcessInfo.processInfo.environment["FIREGATE_HOST"] ?? "127.0.0.1"

    @Option(help: "Port to listen on (env FIREGATE_PORT).")
    var port: Int = Int(ProcessInfo.processInfo.environment["FIREGATE_PORT"] ?? "") ?? 8080

    @Option(name: .customLong("firebase-json"), help: "firebase.json whose firestore.rules and database.rules are loaded and watched (env FIREGATE_FIREBASE_JSON).")
    var firebaseJSON: String? = ProcessInfo.processInfo.environment["FIREGATE_FIREBASE_JSON"]

    @OptionGroup var server: ServerOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
    }

    func run() async throws {
        server.bootstrapLogging()
        let configuration = server.configuration(host: host, port: port, project: server.project ?? "demo-project",
                                                 dataDirectory: server.dataDir ?? "./.firegate")
        let opened = try await server.open(configuration, firebaseJSON: firebaseJSON)
        let app = try FiregateServer.makeApplication(configuration: configuration, backend: opened.backend, clients: opened.clients)
        // The server runs while the stored documents load; a failed load stops it.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            group.addTask { try await opened.loaded() }
            while try await group.next() != nil {}
        }
        try await server.close(opened)
    }
}
