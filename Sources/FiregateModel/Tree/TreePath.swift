/// A location in a tree: the keys from the root down. The root has no keys.
///
/// Paths are validated when built from text; `init(keys:)` trusts its caller.
public struct TreePath: Sendable, Hashable, CustomStringConvertible {
    public private(set) var keys: [String]

    public static let root = TreePath(keys: [])

    public init(keys: [String]) { self.keys = keys }

    /// Parses `a/b/c`; empty segments (leading, trailing or doubled slashes) are ignored, so
    /// `/a//b/` is `a/b`. `.priority` is accepted as the last key (the priority pseudo-child)
    /// when `allowPriority` is set. Invalid keys throw the production error text.
    public init(validating text: some StringProtocol, allowPriority: Bool = true) throws(FiregateError) {
        var keys: [String] = []
        for segment in text.split(separator: "/", omittingEmptySubsequences: true) {
            keys.append(String(segment))
        }
        for (i, key) in keys.enumerated() {
            if key == TreeKey.priority, allowPriority, i == keys.count - 1 { continue }
            guard TreeKey.isValid(key) else { throw TreePath.invalidPathError }
        }
        guard keys.count <= TreeKey.maxDepth + (keys.last == TreeKey.priority ? 1 : 0) else {
            throw FiregateError.invalidArgument("Invalid path: Path exceeds the maximum depth of \(TreeKey.maxDepth).")
        }
        self.keys = keys
    }

    /// The error production answers for a URL path with a bad key.
    public static let invalidPathError = FiregateError.invalidArgument("Invalid path: Invalid token in path")

    public var isRoot: Bool { keys.isEmpty }
    public var count: Int { keys.count }
    public var last: String? { keys.last }

    /// Whether this path ends in the `.priority` pseudo-child.
    public var isPriority: Bool { keys.last == TreeKey.priority }

    public var parent: TreePath? { keys.isEmpty ? nil : TreePath(keys: Array(keys.dropLast())) }

    public func appending(_ key: String) -> TreePath { TreePath(keys: keys + [key]) }
    public func appending(_ path: TreePath) -> TreePath { TreePath(keys: keys + path.keys) }

    /// Whether `self` is `other` or one of its ancestors.
    public func contains(_ other: TreePath) -> Bool {
        other.keys.count >= keys.count && other.keys.starts(with: keys)
    }

    /// `other` relative to `self` when `self` contains it.
    public func relativePath(to descendant: TreePath) -> TreePath? {
        guard contains(descendant) else { return nil }
        return TreePath(keys: Array(descendant.keys.dropFirst(keys.count)))
    }

    /// `/a/b`, and `/` for the root: the form stream events use.
    public var description: String { keys.isEmpty ? "/" : "/" + keys.joined(separator: "/") }

    /// `a/b`, and the empty string for the root: the form storage keys on.
    public var joined: String { keys.joined(separator: "/") }
}
