import FiregateModel
import Foundation

/// What Firegate reads of a project's `firebase.json` (docs/firebase-cli.md): the `emulators`
/// block's hosts and ports, and which services the file configures. Rules files are read by
/// `RulesFiles` from the same file.
public struct FirebaseJSON: Sendable, Equatable {
    /// `emulators.<name>`: a host and port, each optional (the CLI's defaults fill the gaps).
    public struct Endpoint: Sendable, Equatable {
        public var host: String?
        public var port: Int?
        public init(host: String? = nil, port: Int? = nil) { self.host = host; self.port = port }
    }

    /// The file's path, as given.
    public let path: String
    /// `emulators.<name>` for every name present (`firestore`, `database`, `hub`, `auth`, …).
    public let emulators: [String: Endpoint]
    /// The top-level keys (`firestore`, `database`, `hosting`, …): a service with a key of its
    /// own is started, as one with an `emulators.<name>` block.
    public let sections: Set<String>
    /// `emulators.singleProjectMode` (absent: true).
    public let singleProjectMode: Bool

    public init(path: String, emulators: [String: Endpoint], sections: Set<String>, singleProjectMode: Bool = true) {
        self.path = path
        self.emulators = emulators
        self.sections = sections
        self.singleProjectMode = singleProjectMode
    }

    /// Reads the file; a missing or malformed file, or a port that is not a port, is an error
    /// naming the file and the key.
    public static func read(_ path: String) throws(FiregateError) -> FirebaseJSON {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .invalidArgument("\(path): cannot be read.")
        }
        let json: JSON
        do { json = try JSONParser.parse([UInt8](data)) } catch {
            throw .invalidArgument("\(path): not valid JSON (\(error)).")
        }
        return try parse(json, path: path)
    }

    static func parse(_ json: JSON, path: String) throws(FiregateError) -> FirebaseJSON {
        guard let top = json.objectValue else { throw .invalidArgument("\(path): the top level must be an object.") }
        var emulators: [String: Endpoint] = [:]
        var singleProjectMode = true
        if let block = top["emulators"] {
            guard let fields = block.objectValue else { throw .invalidArgument("\(path): \"emulators\" must be an object.") }
            for (name, value) in fields {
                if name == "singleProjectMode" {
                    singleProjectMode = value.boolValue ?? true
                    continue
                }
                guard let settings = value.objectValue else { continue }
                var endpoint = Endpoint()
                if let host = settings["host"] {
                    guard let text = host.stringValue, !text.isEmpty else { throw .invalidArgument("\(path): emulators.\(name).host must be a host name.") }
                    endpoint.host = text
                }
                if let port = settings["port"] { endpoint.port = try Self.port(port, key: "emulators.\(name).port", path: path) }
                emulators[name] = endpoint
            }
        }
        return FirebaseJSON(path: path, emulators: emulators, sections: Set(top.keys), singleProjectMode: singleProjectMode)
    }

    /// A port as the CLI takes it: a number, or a string of digits (`"8081"`).
    private static func port(_ value: JSON, key: String, path: String) throws(FiregateError) -> Int {
        let number: Int? = switch value {
        case .int(let n): Int(exactly: n)
        case .string(let s): Int(s.trimmingCharacters(in: .whitespaces))
        case .double(let d): Int(exactly: d)
        default: nil
        }
        guard let number, (0...65535).contains(number) else { throw .invalidArgument("\(path): \(key) must be a port (0 to 65535).") }
        return number
    }
}
