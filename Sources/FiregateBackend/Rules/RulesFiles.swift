import FiregateModel
import FiregateRules
import Foundation
import Logging

/// The rules files named at start (`--firestore-rules`, `--database-rules [NS=]PATH`,
/// `--firebase-json`), loaded as the startup rules and reloaded when they change, as the CLI's
/// emulators do: the files are polled, and a change is read once it has settled (a file read
/// while an editor writes it can be empty). A reload with errors is logged and keeps the rules
/// in force.
public final class RulesFiles: Sendable {
    public struct Source: Sendable, Equatable {
        public enum Kind: Sendable, Equatable {
            case firestore
            /// nil: every namespace.
            case database(namespace: String?)
        }

        public let kind: Kind
        public let path: String
    }

    public let sources: [Source]
    let rules: SecurityRules
    let logger = Logger(label: "firegate.rules")

    /// `databaseRules` items are `PATH` or `NS=PATH`. `firebaseJSON` adds its `firestore.rules`
    /// and `database.rules` (or a list of `{instance|target, rules}`), relative to its folder; a
    /// target names the instances `databaseTargets` gives it (`.firebaserc`'s `targets`), else itself.
    public init(rules: SecurityRules, firestoreRules: String?, databaseRules: [String], firebaseJSON: String?,
                databaseTargets: [String: [String]] = [:]) throws(FiregateError) {
        var sources: [Source] = []
        if let firebaseJSON { sources += try RulesFiles.sources(ofFirebaseJSON: firebaseJSON, databaseTargets: databaseTargets) }
        if let firestoreRules {
            sources.removeAll { $0.kind == .firestore }
            sources.append(Source(kind: .firestore, path: firestoreRules))
        }
        for item in databaseRules {
            if let equals = item.firstIndex(of: "="), !item[..<equals].contains("/") {
                sources.append(Source(kind: .database(namespace: String(item[..<equals])), path: String(item[item.index(after: equals)...])))
            } else {
                sources.append(Source(kind: .database(namespace: nil), path: item))
            }
        }
        self.sources = sources
        self.rules = rules
    }

    static func sources(ofFirebaseJSON path: String, databaseTargets: [String: [String]] = [:]) throws(FiregateError) -> [Source] {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        func resolved(_ file: String) -> String { file.hasPrefix("/") ? file : folder.appendingPathComponent(file).path }
        guard let data = FileManager.default.contents(atPath: path), let json = try? JSONParser.parse([UInt8](data)) else {
            throw .invalidArgument("--firebase-json \(path): not a readable JSON file.")
        }
        var sources: [Source] = []
        if let file = json.member("firestore")?.member("rules")?.stringValue {
            sources.append(Source(kind: .firestore, path: resolved(file)))
        }
        switch json.member("database") {
        case .object?:
            if let file = json.member("database")?.member("rules")?.stringValue {
                sources.append(Source(kind: .database(namespace: nil), path: resolved(file)))
            }
        case .array(let instances)?:
            for instance in instances {
                guard let file = instance.member("rules")?.stringValue else { continue }
                if let namespace = instance.member("instance")?.stringValue {
                    sources.append(Source(kind: .database(namespace: namespace), path: resolved(file)))
                } else if let target = instance.member("target")?.stringValue {
                    for namespace in databaseTargets[target] ?? [target] {
                        sources.append(Source(kind: .database(namespace: namespace), path: resolved(file)))
                    }
                } else {
                    sources.append(Source(kind: .database(namespace: nil), path: resolved(file)))
                }
            }
        default: break
        }
        return sources
    }

    /// Loads every file; the first that cannot be read or has errors stops the start.
    public func loadAll() throws(FiregateError) {
        for source in sources {
            guard let text = RulesFiles.read(source.path) else { throw .invalidArgument("Rules file \(source.path) cannot be read.") }
            if let problem = load(source, text) { throw .invalidArgument(problem) }
        }
    }

    /// Watches the files until the task is cancelled: a change is loaded once the file has
    /// stayed the same for `settle`.
    public func watch(every interval: Duration = .milliseconds(500), settle: Duration = .milliseconds(200)) -> Task<Void, Never> {
        let sources = sources
        return Task { [self] in
            var seen = sources.map { RulesFiles.read($0.path) }
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                for (i, source) in sources.enumerated() {
                    guard let text = RulesFiles.read(source.path), text != seen[i] else { continue }
                    try? await Task.sleep(for: settle)
                    guard let settled = RulesFiles.read(source.path), settled == text, !settled.isEmpty else { continue }
                    seen[i] = settled
                    if let problem = load(source, settled) {
                        logger.warning("rules not reloaded", metadata: ["file": .string(source.path), "problem": .string(problem)])
                    } else {
                        logger.info("rules reloaded", metadata: ["file": .string(source.path)])
                    }
                }
            }
        }
    }

    /// Loads one file's text; the problem when it has errors.
    private func load(_ source: Source, _ text: String) -> String? {
        switch source.kind {
        case .firestore:
            let name = URL(fileURLWithPath: source.path).lastPathComponent
            let (applied, issues) = rules.loadFirestore(project: nil, fileName: name, source: text)
            guard !applied else { return nil }
            return "\(source.path): " + issues.filter { $0.severity == .error }.map { "\($0.position): \($0.description)" }.joined(separator: "; ")
        case .database(let namespace):
            do {
                try rules.loadRealtime(namespace: namespace, source: text, startup: true)
                return nil
            } catch {
                return "\(source.path): line \(error.position.line): \(error.description)"
            }
        }
    }

    static func read(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }
}
