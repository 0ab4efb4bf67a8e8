import FiregateModel

/// One SDK-level event of a tree listener: `value`, `child_added`, `child_changed`,
/// `child_removed` or `child_moved`.
public struct TreeEvent: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case childRemoved = "child_removed"
        case childAdded = "child_added"
        case childMoved = "child_moved"
        case childChanged = "child_changed"
        case value
    }

    public let kind: Kind
    /// The child's key; for `value`, the location's last key (nil at the root).
    public let key: String?
    /// The child's value (its old value for `child_removed`); for `value`, the view's value.
    public let node: TreeNode
    /// The preceding sibling in the view's order after the operation; always nil for
    /// `child_removed` and `value`.
    public let previousChildKey: String?

    public init(kind: Kind, key: String?, node: TreeNode, previousChildKey: String? = nil) {
        self.kind = kind
        self.key = key
        self.node = node
        self.previousChildKey = previousChildKey
    }

    /// `{"key":…,"value":…,"previousChildKey":…}`; `format` export keeps priorities.
    public func json(format: TreeFormat = .plain) -> [UInt8] {
        var out: [UInt8] = Array(#"{"key":"#.utf8)
        if let key { JSONWriter.writeString(key, into: &out) } else { out.append(contentsOf: "null".utf8) }
        out.append(contentsOf: #","value":"#.utf8)
        TreeNodeWriter.write(node, format: format, style: .compact, into: &out)
        if kind != .value && kind != .childRemoved {
            out.append(contentsOf: #","previousChildKey":"#.utf8)
            if let previousChildKey { JSONWriter.writeString(previousChildKey, into: &out) } else { out.append(contentsOf: "null".utf8) }
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// What a tree listener's stream carries.
public enum TreeListenerOutput: Sendable {
    /// The events of one operation, in order, numbered from `firstID`.
    case events([TreeEvent], firstID: Int64)
    /// `gates:sync`: everything before it has been delivered.
    case sync(token: String)
    /// The listen was cancelled (e.g. the client was reset); the stream ends.
    case cancel(FiregateError)
}
