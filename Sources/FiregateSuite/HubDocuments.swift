import FiregateModel

/// The bodies of the hub's discovery routes (docs/firebase-cli.md): `GET /` says who runs the
/// hub, `GET /emulators` what runs where, in the shape the CLI's hub answers and
/// `@firebase/rules-unit-testing` and the Emulator UI read.
public enum HubDocuments {
    /// What the hub reports as its version.
    public static let version = "firegate"

    /// The locator file `<temporary folder>/hub-<project>.json`, by which `emulators:export`
    /// finds the hub of a running suite.
    public static func locatorFileName(project: String) -> String { "hub-\(project).json" }

    public static func locatorFile(plan: SuitePlan, pid: Int32) -> JSON {
        .object([
            "version": .string(version),
            "origins": .array([.string("http://\(plan.hub.hostAndPort)")]),
            "pid": .int(Int64(pid)),
        ])
    }

    /// `GET /`.
    public static func locator(plan: SuitePlan, pid: Int32) -> JSON {
        .object([
            "version": .string(version),
            "origins": .array([.string("http://\(plan.hub.hostAndPort)")]),
            "pid": .int(Int64(pid)),
            "host": .string(plan.hub.host),
            "port": .int(Int64(plan.hub.port)),
        ])
    }

    /// `GET /emulators`: one key per running service.
    public static func emulators(plan: SuitePlan, pid: Int32) -> JSON {
        var body: [(String, JSON)] = [("hub", entry(plan.hub, pid: nil))]
        for listener in plan.services { body.append((listener.service.rawValue, entry(listener, pid: pid))) }
        return .object(.init(uniqueKeysWithValues: body))
    }

    private static func entry(_ listener: SuitePlan.Listener, pid: Int32?) -> JSON {
        var fields: [(String, JSON)] = [
            ("listen", .array([.object([
                "address": .string(listener.bindHost),
                "family": .string(listener.bindHost.contains(":") ? "IPv6" : "IPv4"),
                "port": .int(Int64(listener.port)),
            ])])),
            ("name", .string(listener.service.rawValue)),
            ("host", .string(listener.host)),
            ("port", .int(Int64(listener.port))),
        ]
        if let pid { fields.append(("pid", .int(Int64(pid)))) }
        return .object(.init(uniqueKeysWithValues: fields))
    }
}
