import FiregateModel
import FiregateSuite
import Foundation
import Logging

/// The hub's locator file, `<temporary folder>/hub-<project>.json` (docs/firebase-cli.md):
/// written when the suite is up, unless a live process owns it already (another suite of the same
/// project: the CLI warns and leaves it), and removed at the end if it is still this process's.
struct HubLocator {
    let path: String
    let contents: [UInt8]
    let logger: Logger

    init(plan: SuitePlan, logger: Logger) {
        path = HubLocator.path(project: plan.projectID)
        contents = JSONWriter.bytes(HubDocuments.locatorFile(plan: plan, pid: getpid()), style: .pretty)
        self.logger = logger
    }

    static func path(project: String) -> String {
        let folder = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return URL(fileURLWithPath: folder).appendingPathComponent(HubDocuments.locatorFileName(project: project)).path
    }

    /// The pid a locator file names, when that process is alive.
    static func livePID(at path: String) -> pid_t? {
        guard let data = FileManager.default.contents(atPath: path), let json = try? JSONParser.parse([UInt8](data)),
              let pid = json["pid"]?.integerLike, let id = pid_t(exactly: pid), id > 0, kill(id, 0) == 0 || errno == EPERM else { return nil }
        return id
    }

    func write() {
        if let other = HubLocator.livePID(at: path), other != getpid() {
            logger.warning("Another suite of this project runs (pid \(other)): \(path) is left to it; emulators:export reaches that one.")
            return
        }
        FileManager.default.createFile(atPath: path, contents: Data(contents))
    }

    func remove() {
        if HubLocator.livePID(at: path) == getpid() { try? FileManager.default.removeItem(atPath: path) }
    }
}
