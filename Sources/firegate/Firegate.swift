import ArgumentParser

/// `firegate`: run the server (`serve`, the default), or run a command against it the way the
/// Firebase CLI runs its emulators (`exec`, `emulators:start`; docs/firebase-cli.md).
@main
struct Firegate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "firegate",
        abstract: "A Firebase-style backend emulator with offline-capable edge clients.",
        subcommands: [Serve.self, Exec.self, EmulatorsStart.self, EmulatorsExport.self],
        defaultSubcommand: Serve.self
    )
}

/// Why the server stopped during its start (printed as `Error: …`).
struct StartupFailure: Error, CustomStringConvertible {
    let description: String
}
