import FiregateHTTP
import FiregateSuite
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// Runs a `SuitePlan`: the server on each port the plan names (one responder behind them all),
/// the hub on its own, and — for `exec` — the command once everything listens. Signals go to the
/// command when there is one, else they stop the servers.
struct SuiteRunner {
    let server: ServerOptions
    var plan: SuitePlan
    let firebaseJSON: FirebaseJSON?

    init(server: ServerOptions, plan: SuitePlan, firebaseJSON: FirebaseJSON?) {
        self.server = server
        self.plan = plan
        self.firebaseJSON = firebaseJSON
    }

    private enum Event: Sendable {
        case listening
        case stopped((any Error)?)
    }

    /// Runs until the command ends (firegate exits with its status) or, without one, until a
    /// signal (firegate exits 0).
    mutating func run(command: [String]?) async throws -> Never {
        server.bootstrapLogging()
        var logger = Logger(label: "firegate")
        logger.logLevel = server.level
        for name in plan.notProvided {
            logger.warning("Firegate does not emulate \(name): not started.")
        }
        if let export = server.exportOnExit { try SuiteOptions.refuseWorkingFolder(export) }
        let requested = plan
        try choosePorts()
        var main = plan.services[0]
        var configuration = server.configuration(host: main.bindHost, port: main.port, project: plan.projectID, dataDirectory: server.dataDir)
        // One Realtime Database under the names the parties use: the Admin SDK (FIREBASE_CONFIG's
        // databaseURL) and rules-unit-testing say `<project>`, client SDKs `<project>-default-rtdb`.
        let opened = try await server.open(configuration, firebaseJSON: firebaseJSON?.path,
                                           namespaceAliases: ["\(plan.projectID)-default-rtdb": plan.projectID],
                                           databaseTargets: plan.databaseTargets)
        // An import can take seconds, in which another process may take a port chosen for us.
        try chooseAgainIfTaken(requested)
        main = plan.services[0]
        configuration.port = main.port

        let (events, report) = AsyncStream<Event>.makeStream()
        var addresses: [(host: String, port: Int)] = []
        for listener in plan.services where !addresses.contains(where: { $0.host == listener.bindHost && $0.port == listener.port }) {
            addresses.append((listener.bindHost, listener.port))
        }
        var services = try FiregateServer.makeApplications(configuration: configuration, backend: opened.backend, clients: opened.clients,
                                                           addresses: addresses, onRunning: { _ in report.yield(.listening) })
        let project = plan.projectID, backend = opened.backend
        services.append(HubServer.makeApplication(plan: plan, logger: logger, export: { path in
            try await FiregateServer.writeExportDirectory(to: path, project: project, backend: backend)
        }, onRunning: { _ in report.yield(.listening) }))
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [], logger: logger))
        let running = Task {
            do { try await group.run(); report.yield(.stopped(nil)) } catch { report.yield(.stopped(error)) }
        }
        var iterator = events.makeAsyncIterator()
        var listening = 0
        while listening < services.count {
            switch await iterator.next() {
            case .listening?: listening += 1
            case .stopped(let error)?:
                throw StartupFailure(description: "The servers stopped while starting: \(error.map { "\($0)" } ?? "no error")")
            case nil: throw StartupFailure(description: "The servers stopped while starting.")
            }
        }
        try await opened.loaded()
        let locator = HubLocator(plan: plan, logger: logger)
        locator.write()

        let status: Int32
        if let command {
            let child = try ChildProcess(command: command, environment: SuiteEnvironment.variables(for: plan, inheriting: ProcessInfo.processInfo.environment))
            logger.info("Running script: \(command.joined(separator: " "))")
            // The signals the CLI handles go on to the command; its end ends the servers.
            let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup, .sigquit)
            let relay = Task { [logger] in for await signal in signals { logger.debug("signal passed to the command", metadata: ["signal": "\(signal)"]); child.send(signal.rawValue) } }
            status = await child.exitStatus()
            relay.cancel()
        } else {
            // Written at once (not buffered): scripts wait for this line on a pipe.
            var announcement = "All emulators ready! It is now safe to connect your app.\n"
            for listener in plan.services + [plan.hub] { announcement += "  \(listener.service.rawValue)  \(listener.hostAndPort)\n" }
            FileHandle.standardOutput.write(Data(announcement.utf8))
            for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm, .sighup, .sigquit) { break }
            status = 0
        }
        locator.remove()
        await group.triggerGracefulShutdown()
        while let event = await iterator.next() { if case .stopped = event { break } }
        _ = await running.result
        try await server.close(opened, directoryOf: plan.projectID)
        // Exit here: freeing what the servers held (every document) would only delay the exit
        // (a tenth of `exec --import` of 100 000 documents).
        fflush(nil)
        exit(status)
    }

    /// The ports chosen for us (port 0, the hub's default) that another process took meanwhile
    /// are chosen again; those the configuration fixed stay (binding then names the port).
    private mutating func chooseAgainIfTaken(_ requested: SuitePlan) throws {
        var taken = plan.services.map(\.port) + [plan.hub.port]
        func again(_ listener: inout SuitePlan.Listener, chosen: Bool) throws {
            guard chosen, !PortProbe.isFree(host: listener.bindHost, port: listener.port) else { return }
            repeat {
                listener.port = try PortProbe.freePort(host: listener.bindHost)
            } while taken.contains(listener.port)
            taken.append(listener.port)
        }
        for i in plan.services.indices { try again(&plan.services[i], chosen: requested.services[i].port == 0) }
        try again(&plan.hub, chosen: requested.hub.port == 0 || !requested.hub.configured)
    }

    /// Port 0 becomes a free port (so the command's variables name real ones); the hub's default
    /// port moves up to the next free one, as the CLI's does; a busy fixed port stops the start.
    private mutating func choosePorts() throws {
        var taken: [Int] = []
        func resolve(_ listener: inout SuitePlan.Listener, movable: Bool) throws {
            if listener.port == 0 {
                listener.port = try PortProbe.freePort(host: listener.bindHost)
            } else if movable {
                while taken.contains(listener.port) || !PortProbe.isFree(host: listener.bindHost, port: listener.port) {
                    listener.port += 1
                    guard listener.port <= 65535 else { throw StartupFailure(description: "No free port for the hub.") }
                }
            } else if !taken.contains(listener.port), !PortProbe.isFree(host: listener.bindHost, port: listener.port) {
                throw StartupFailure(description: "Could not start the \(listener.service.rawValue) emulator: port \(listener.port) on \(listener.bindHost) is taken.")
            }
            taken.append(listener.port)
        }
        var services = plan.services
        for i in services.indices { try resolve(&services[i], movable: false) }
        var hub = plan.hub
        try resolve(&hub, movable: !hub.configured)
        plan.services = services
        plan.hub = hub
    }
}
