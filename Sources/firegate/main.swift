import ArgumentParser
import FiregateBackend
import FiregateHTTP
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

    @Option(help: "Default project id and tree namespace (env FIREGATE_PROJECT).")
    var project: String = ProcessInfo.processInfo.environment["FIREGATE_PROJECT"] ?? "demo-project"

    @Option(help: "Seconds between keep-alive comments on event streams (env FIREGATE_KEEPALIVE_SECONDS).")
    var keepAliveSeconds: Double = Double(ProcessInfo.processInfo.environment["FIREGATE_KEEPALIVE_SECONDS"] ?? "") ?? 15

    @Option(help: "trace, debug, info, notice, warning, error or critical (env FIREGATE_LOG_LEVEL).")
    var logLevel: String = ProcessInfo.processInfo.environment["FIREGATE_LOG_LEVEL"] ?? "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard keepAliveSeconds >= 0.01, keepAliveSeconds <= 3600 else { throw ValidationError("--keep-alive-seconds must be between 0.01 and 3600") }
        guard Logger.Level(rawValue: logLevel.lowercased()) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
    }

    func run() async throws {
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.dataDirectory = inMemory ? nil : URL(fileURLWithPath: dataDir)
        configuration.project = project
        configuration.logLevel = Logger.Level(rawValue: logLevel.lowercased()) ?? .info
        configuration.listen.keepAliveSeconds = keepAliveSeconds
        let backend = try await FiregateServer.openBackend(configuration)
        let app = FiregateServer.makeApplication(configuration: configuration, backend: backend)
        try await app.runService()
    }
}
