import ArgumentParser
import FiregateHTTP
import FiregateModel
import FiregateSuite
import Foundation

/// What `exec` and `emulators:start` take besides the server's options: the CLI's own flags.
struct SuiteOptions: ParsableArguments {
    @Option(name: [.customShort("c"), .customLong("config")], help: "firebase.json (default: ./firebase.json when there is one).")
    var config: String?

    @Option(help: "The services to run, as the CLI's --only (firestore, database; others are named and skipped).")
    var only: String?

    @Flag(help: "Accepted for the CLI's sake: Firegate's dashboard is always at / on the Firestore port.")
    var ui: Bool = false

    /// The plan from firebase.json, .firebaserc (beside firebase.json, else here) and the flags.
    func plan(project: String?) throws -> (SuitePlan, FirebaseJSON?) {
        try SuiteOptions.plan(config: config, only: only, project: project)
    }

    /// An export replaces the folder it is written to, as the CLI's does: never the working
    /// folder or one above it. The folder's absolute path.
    @discardableResult
    static func refuseWorkingFolder(_ path: String) throws -> String {
        let target = URL(fileURLWithPath: path).standardizedFileURL.path
        let here = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).standardizedFileURL.path
        if here == target || here.hasPrefix(target == "/" ? "/" : target + "/") {
            throw StartupFailure(description: "\(path) is this folder or one above it: an export replaces the folder it is written to.")
        }
        return target
    }

    static func plan(config: String?, only: String?, project: String?) throws -> (SuitePlan, FirebaseJSON?) {
        let fileManager = FileManager.default
        let configPath = config ?? (fileManager.fileExists(atPath: "firebase.json") ? "firebase.json" : nil)
        do {
            var firebaseJSON: FirebaseJSON?
            if let configPath { firebaseJSON = try FirebaseJSON.read(configPath) }
            let folder = configPath.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path } ?? "."
            let rcPath = folder + "/.firebaserc"
            var rc: FirebaseRC?
            if fileManager.fileExists(atPath: rcPath) { rc = try FirebaseRC.read(rcPath) }
            return (try SuitePlan(config: firebaseJSON, rc: rc, projectFlag: project, only: only), firebaseJSON)
        } catch {
            throw StartupFailure(description: error.message)
        }
    }
}

/// `firegate exec -- CMD…` (also `emulators:exec "CMD"`): the server on firebase.json's ports
/// and the hub, CMD run once they listen, with the variables the CLI sets; then the server
/// stops, and firegate exits with CMD's status (docs/firebase-cli.md).
struct Exec: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec", abstract: "Run a command against the server, as `firebase emulators:exec`.",
        aliases: ["emulators:exec"])

    @OptionGroup var suite: SuiteOptions
    @OptionGroup var server: ServerOptions

    @Argument(help: "The command (after --): one argument runs through /bin/sh -c (as the CLI's script), several run as they are.")
    var command: [String] = []

    mutating func validate() throws {
        if command.first == "--" { command.removeFirst() }
        guard !command.isEmpty else { throw ValidationError("exec needs a command to run") }
    }

    mutating func run() async throws {
        if command.first == "--" { command.removeFirst() }
        let (plan, firebaseJSON) = try suite.plan(project: server.project)
        var runner = SuiteRunner(server: server, plan: plan, firebaseJSON: firebaseJSON)
        try await runner.run(command: command)
    }
}

/// `firegate emulators:start`: the server on firebase.json's ports and the hub until SIGINT or
/// SIGTERM, announced with the line CI scripts wait for.
struct EmulatorsStart: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulators:start", abstract: "Run the server on firebase.json's ports with the hub, as `firebase emulators:start`.")

    @OptionGroup var suite: SuiteOptions
    @OptionGroup var server: ServerOptions

    func run() async throws {
        let (plan, firebaseJSON) = try suite.plan(project: server.project)
        var runner = SuiteRunner(server: server, plan: plan, firebaseJSON: firebaseJSON)
        try await runner.run(command: nil)
    }
}

/// `firegate emulators:export DIR`: asks the hub of the running suite of the project (found
/// through its locator file, as the CLI finds it) to write the export directory into DIR.
struct EmulatorsExport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulators:export", abstract: "Export the data of a running `exec` or `emulators:start`, as `firebase emulators:export`.")

    @Argument(help: "The folder to write; it is replaced whole.")
    var path: String

    @Option(name: [.customShort("c"), .customLong("config")], help: "firebase.json (default: ./firebase.json when there is one).")
    var config: String?

    @Option(name: [.customShort("P"), .long], help: "Project id or .firebaserc alias of the running suite.")
    var project: String?

    @Flag(help: "Replace a folder that is not empty.")
    var force = false

    func run() async throws {
        let (plan, _) = try SuiteOptions.plan(config: config, only: nil, project: project)
        let target = try SuiteOptions.refuseWorkingFolder(path)
        if !force, let items = try? FileManager.default.contentsOfDirectory(atPath: target), !items.isEmpty {
            throw StartupFailure(description: "\(path) is not empty: pass --force to replace it.")
        }
        let locator = HubLocator.path(project: plan.projectID)
        guard HubLocator.livePID(at: locator) != nil, let data = FileManager.default.contents(atPath: locator),
              let origins = (try? JSONParser.parse([UInt8](data)))?["origins"]?.arrayValue?.compactMap(\.stringValue), !origins.isEmpty else {
            throw StartupFailure(description: "No running suite of project \(plan.projectID) (no live \(locator)): start one with firegate exec or emulators:start.")
        }
        var failure = "no origin answered"
        for origin in origins {
            guard let reason = await HubServer.requestExport(origin: origin, path: target) else {
                print("Exported to \(target)")
                return
            }
            failure = reason
        }
        throw StartupFailure(description: "The export failed: \(failure)")
    }
}
