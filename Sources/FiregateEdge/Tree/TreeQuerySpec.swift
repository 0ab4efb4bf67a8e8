import FiregateModel

/// What a tracked query and a server listen are keyed by: a location and, for a query that
/// filters (a range or a limit), that query. A query that only orders loads all data, so it is
/// normalized to the default query of its location, as the SDK's tracked queries are.
public struct TreeQuerySpec: Sendable, Hashable, CustomStringConvertible {
    public let path: TreePath
    /// nil: all data at the path.
    public let query: TreeQuery?
    /// The filtering query's REST parameters as a canonical JSON object ("" for the default
    /// query): how the spec is stored and shown.
    public let parameters: String

    public init(path: TreePath, query: TreeQuery?, parameters: [String: String]) {
        self.path = path
        if let query, query.filters {
            self.query = query
            var text = "{"
            for (i, (name, value)) in parameters.filter({ TreeQueryParser.names.contains($0.key) }).sorted(by: { $0.key < $1.key }).enumerated() {
                var out: [UInt8] = []
                JSONWriter.writeString(name, into: &out)
                out.append(UInt8(ascii: ":"))
                JSONWriter.writeString(value, into: &out)
                text += (i == 0 ? "" : ",") + String(decoding: out, as: UTF8.self)
            }
            self.parameters = text + "}"
        } else {
            self.query = nil
            self.parameters = ""
        }
    }

    /// All data at `path`.
    public static func all(_ path: TreePath) -> TreeQuerySpec { TreeQuerySpec(path: path, query: nil, parameters: [:]) }

    /// A stored spec read back; nil when its parameters no longer parse.
    init?(path: String, parameters: String) {
        let treePath = TreePath(keys: path.isEmpty ? [] : path.split(separator: "/", omittingEmptySubsequences: false).map(String.init))
        guard !parameters.isEmpty else {
            self = .all(treePath)
            return
        }
        guard case .object(let members)? = try? JSONParser.parse(parameters) else { return nil }
        var dictionary: [String: String] = [:]
        for (name, value) in members {
            guard let text = value.stringValue else { return nil }
            dictionary[name] = text
        }
        guard let query = try? TreeQueryParser.parse(dictionary) else { return nil }
        self.init(path: treePath, query: query, parameters: dictionary)
    }

    public var loadsAllData: Bool { query == nil }

    public static func == (a: TreeQuerySpec, b: TreeQuerySpec) -> Bool { a.path == b.path && a.query == b.query }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(path)
        hasher.combine(query)
    }

    public var description: String { parameters.isEmpty ? path.description : "\(path.description) \(parameters)" }
}

/// What a view is keyed by: the spec plus the order its children are reported in (two
/// listeners on one location ordered differently share the data but not the events).
public struct TreeViewKey: Sendable, Hashable {
    public let spec: TreeQuerySpec
    /// The query as asked (ordering included); nil orders by key.
    public let query: TreeQuery?

    public init(path: TreePath, query: TreeQuery?, parameters: [String: String]) {
        spec = TreeQuerySpec(path: path, query: query, parameters: parameters)
        self.query = query
    }

    public var path: TreePath { spec.path }
    public var index: TreeQuery.Index { query?.index ?? .key }
    /// Under `/.info`: the client's own connection state, never synced.
    public var isInfo: Bool { path.keys.first == TreeInfo.rootKey }
}
