import FiregateModel
import Foundation

/// A project's `.firebaserc`: the aliases of `firebase use` (`projects`), read the way the CLI
/// reads it (comments allowed). Firegate takes from it the project a suite runs as.
public struct FirebaseRC: Sendable, Equatable {
    /// Alias → project id (`{"projects":{"default":"demo-x"}}`).
    public let projects: [String: String]
    /// Project → Realtime Database target → instances (`{"targets":{"demo-x":{"database":{"main":["demo-x-default-rtdb"]}}}}`).
    public let databaseTargets: [String: [String: [String]]]

    public init(projects: [String: String], databaseTargets: [String: [String: [String]]] = [:]) {
        self.projects = projects
        self.databaseTargets = databaseTargets
    }

    /// Reads the file; a malformed file is an error naming it.
    public static func read(_ path: String) throws(FiregateError) -> FirebaseRC {
        guard let data = FileManager.default.contents(atPath: path) else { throw .invalidArgument("\(path): cannot be read.") }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }

    static func parse(_ text: String, path: String) throws(FiregateError) -> FirebaseRC {
        let json: JSON
        do { json = try JSONParser.parse(JSONComments.stripped(text)) } catch {
            throw .invalidArgument("\(path): not valid JSON (\(error)).")
        }
        guard let top = json.objectValue else { throw .invalidArgument("\(path): the top level must be an object.") }
        var projects: [String: String] = [:]
        for (alias, id) in top["projects"]?.objectValue ?? [:] {
            if let id = id.stringValue { projects[alias] = id }
        }
        var targets: [String: [String: [String]]] = [:]
        for (project, kinds) in top["targets"]?.objectValue ?? [:] {
            for (target, instances) in kinds["database"]?.objectValue ?? [:] {
                targets[project, default: [:]][target] = instances.arrayValue?.compactMap(\.stringValue) ?? []
            }
        }
        return FirebaseRC(projects: projects, databaseTargets: targets)
    }

    /// The project named by `--project` (an alias or an id), else the only alias, else the alias
    /// `default`; nil when none of them says.
    public func project(flag: String?) -> String? {
        if let flag { return projects[flag] ?? flag }
        if projects.count == 1, let only = projects.values.first { return only }
        return projects["default"]
    }
}

/// Removes `//` and `/* */` comments outside strings, as the CLI's reader of `.firebaserc` allows.
enum JSONComments {
    static func stripped(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        var i = 0, inString = false
        while i < scalars.count {
            let c = scalars[i]
            if inString {
                out.append(c)
                if c == "\\", i + 1 < scalars.count { out.append(scalars[i + 1]); i += 2; continue }
                if c == "\"" { inString = false }
                i += 1
            } else if c == "\"" {
                inString = true
                out.append(c)
                i += 1
            } else if c == "/", i + 1 < scalars.count, scalars[i + 1] == "/" {
                while i < scalars.count, scalars[i] != "\n" { i += 1 }
            } else if c == "/", i + 1 < scalars.count, scalars[i + 1] == "*" {
                i += 2
                while i + 1 < scalars.count, !(scalars[i] == "*" && scalars[i + 1] == "/") { i += 1 }
                i += 2
            } else {
                out.append(c)
                i += 1
            }
        }
        return String(out)
    }
}
