import FiregateModel

/// What `firegate exec` and `emulators:start` run, decided the way the Firebase CLI decides it
/// (docs/firebase-cli.md): which services start (`firebase.json`'s keys, narrowed by `--only`),
/// on which host and port (the `emulators` block, else the CLI's defaults), and as which project
/// (`--project`, an alias of `.firebaserc`, else `demo-no-project`).
public struct SuitePlan: Sendable, Equatable {
    /// The services Firegate serves under the CLI's names.
    public enum Service: String, Sendable, CaseIterable {
        case firestore, database, hub

        /// The CLI's default port for the service.
        public var defaultPort: Int {
            switch self {
            case .firestore: 8080
            case .database: 9000
            case .hub: 4400
            }
        }
    }

    /// One service on one address.
    public struct Listener: Sendable, Equatable {
        public var service: Service
        /// The address bound (`127.0.0.1` for `localhost`, as the CLI binds it).
        public var bindHost: String
        /// The address a client connects to (`127.0.0.1` for `0.0.0.0`, `::1` for `::`).
        public var host: String
        public var port: Int
        /// Whether the port came from `firebase.json` (a busy configured port is an error; the
        /// hub's default moves to the next free one, as the CLI's does).
        public var configured: Bool

        /// `host:port`, IPv6 in brackets: the form of the `*_EMULATOR_HOST` variables.
        public var hostAndPort: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
    }

    /// The project resolved from `--project` and `.firebaserc`, or nil.
    public let project: String?
    /// Firestore and the Realtime Database, those that run, in the CLI's start order.
    public var services: [Listener]
    /// The hub (it always runs).
    public var hub: Listener
    /// Emulators the configuration names that Firegate does not provide (auth, storage, …):
    /// each gets a warning, and the rest runs.
    public let notProvided: [String]

    /// `.firebaserc`'s Realtime Database targets of the project: target → instances.
    public let databaseTargets: [String: [String]]

    /// The project id the servers use: the resolved one, else the CLI's placeholder.
    public var projectID: String { project ?? "demo-no-project" }

    public func listener(_ service: Service) -> Listener? {
        service == .hub ? hub : services.first { $0.service == service }
    }

    /// Every emulator name the CLI knows (`--only` refuses others).
    public static let cliEmulators: Set<String> = [
        "firestore", "database", "hub", "ui", "logging", "auth", "storage", "functions", "pubsub", "hosting",
        "eventarc", "dataconnect", "tasks", "apphosting", "extensions",
    ]

    /// Decides the plan. `config` nil is the CLI's built-in default (Firestore and the Realtime
    /// Database on their default ports); `only` is `--only`'s list as given.
    public init(config: FirebaseJSON?, rc: FirebaseRC?, projectFlag: String?, only: String?) throws(FiregateError) {
        project = rc?.project(flag: projectFlag) ?? projectFlag
        databaseTargets = rc?.databaseTargets[project ?? ""] ?? [:]
        let configured: Set<String> = config.map { $0.sections.union($0.emulators.keys) } ?? ["firestore", "database"]
        var wanted = configured
        if let only {
            let names = only.split(whereSeparator: { $0 == "," || $0 == " " }).map { String($0.split(separator: ":").first ?? "") }
            for name in names where !SuitePlan.cliEmulators.contains(name) {
                throw .invalidArgument("--only \(name): no emulator has that name (\(SuitePlan.cliEmulators.sorted().joined(separator: ", "))).")
            }
            wanted = configured.intersection(names)
        }
        var services: [Listener] = []
        for service in [Service.firestore, .database] where wanted.contains(service.rawValue) {
            services.append(SuitePlan.listener(service, config?.emulators[service.rawValue]))
        }
        guard !services.isEmpty else {
            throw .invalidArgument("No emulators to start: \(config.map { "\($0.path) configures" } ?? "the default is") \(configured.sorted().joined(separator: ", "))\(only.map { " and --only says \($0)" } ?? "").")
        }
        self.services = services
        hub = SuitePlan.listener(.hub, config?.emulators["hub"])
        let others = wanted.subtracting(["firestore", "database", "hub", "ui", "logging"]).intersection(SuitePlan.cliEmulators)
        notProvided = others.sorted()
    }

    private static func listener(_ service: Service, _ endpoint: FirebaseJSON.Endpoint?) -> Listener {
        let host = endpoint?.host ?? "localhost"
        let bind = host == "localhost" ? "127.0.0.1" : host.trimmingCharacters(in: ["[", "]"])
        let connectable = switch bind {
        case "0.0.0.0": "127.0.0.1"
        case "::": "::1"
        default: bind
        }
        return Listener(service: service, bindHost: bind, host: connectable, port: endpoint?.port ?? service.defaultPort,
                        configured: endpoint?.port != nil)
    }
}
