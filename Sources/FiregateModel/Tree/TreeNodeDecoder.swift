/// Turns a written JSON value into a `TreeNode`, validating it the way production does:
/// keys, depth (32 keys from the root), string size, `.priority`/`.value`/`.sv` pseudo-keys.
/// Arrays become objects keyed "0", "1", …; nulls inside objects are dropped.
///
/// Decoding is all-or-nothing: nothing is written unless the whole value is valid.
public struct TreeNodeDecoder {
    /// Longest string value, in UTF-8 bytes (10 MB).
    public static let maxStringBytes = 10 * 1024 * 1024

    /// Thrown when `serverValues` is nil and the value holds a server value, so the caller can
    /// retry where the current tree is at hand.
    public static let needsServerValues = FiregateError(.failedPrecondition, "The value contains server values.")

    /// A number beyond double range (`1e400`): JSON has no infinity, so it is refused rather
    /// than stored as the string "Infinity".
    public static let numberOutOfRangeError = FiregateError.invalidArgument(
        "Invalid data; a number is out of the range of a double.")

    public static let invalidKeyError = FiregateError.invalidArgument(
        "Invalid data; couldn't parse JSON object, array, or value. Perhaps you're using invalid characters in your key names.")

    let serverValues: TreeServerValues?
    var keys: [String]

    /// Decodes `json`, to be written at `path` (absolute; depth and server values depend on it).
    public static func decode(_ json: JSON, at path: TreePath, serverValues: TreeServerValues?) throws(FiregateError) -> TreeNode {
        var decoder = TreeNodeDecoder(serverValues: serverValues, keys: path.keys)
        return try decoder.node(json)
    }

    /// Whether `json` holds a server value placeholder anywhere.
    public static func containsServerValues(_ json: JSON) -> Bool {
        switch json {
        case .object(let fields):
            if fields[TreeKey.serverValue] != nil { return true }
            return fields.values.contains(where: containsServerValues)
        case .array(let items): return items.contains(where: containsServerValues)
        default: return false
        }
    }

    mutating func node(_ json: JSON) throws(FiregateError) -> TreeNode {
        switch json {
        case .null: return .empty
        case .bool(let b): return TreeNode(leaf: .bool(b))
        case .int(let i): return TreeNode(leaf: .int(i))
        case .double(let d):
            guard d.isFinite else { throw TreeNodeDecoder.numberOutOfRangeError }
            return TreeNode(leaf: .double(d))
        case .string(let s):
            guard s.utf8.count <= TreeNodeDecoder.maxStringBytes else { throw TreeLimits.writeTooBig }
            return TreeNode(leaf: .string(s))
        case .array(let items):
            var pairs: [(String, TreeNode)] = []
            for (index, item) in items.enumerated() {
                let child = try childNode(String(index), item)
                if !child.isEmpty { pairs.append((String(index), child)) }
            }
            return TreeNode(children: TreeChildren(unsorted: pairs))
        case .object(let fields):
            return try objectNode(fields)
        }
    }

    mutating func objectNode(_ fields: OrderedDictionaryType) throws(FiregateError) -> TreeNode {
        if let spec = fields[TreeKey.serverValue] {
            guard fields.count == 1 else { throw TreeNodeDecoder.invalidKeyError }
            try TreeServerValues.validate(spec)
            guard let serverValues else { throw TreeNodeDecoder.needsServerValues }
            return TreeNode(leaf: try serverValues.resolve(spec, at: TreePath(keys: keys)))
        }
        let priority = try fields[TreeKey.priority].flatMap { (json) throws(FiregateError) -> TreeLeaf? in try priorityLeaf(json) }
        if let value = fields[TreeKey.value] {
            let allowed = fields.count == 1 || (fields.count == 2 && fields[TreeKey.priority] != nil)
            guard allowed else { throw FiregateError.invalidArgument("Invalid data; \".value\" cannot be set alongside other children.") }
            var node = try node(value)
            node.setPriority(priority)
            return node
        }
        var pairs: [(String, TreeNode)] = []
        pairs.reserveCapacity(fields.count)
        for (key, value) in fields where key != TreeKey.priority {
            let child = try childNode(key, value)
            if !child.isEmpty { pairs.append((key, child)) }
        }
        var node = TreeNode(children: TreeChildren(unsorted: pairs))
        node.setPriority(priority)
        return node
    }

    mutating func childNode(_ key: String, _ json: JSON) throws(FiregateError) -> TreeNode {
        guard TreeKey.isValid(key) else {
            if key.utf8.count > TreeKey.maxBytes {
                throw FiregateError.invalidArgument("Invalid data; key longer than \(TreeKey.maxBytes) bytes.")
            }
            throw TreeNodeDecoder.invalidKeyError
        }
        keys.append(key)
        defer { keys.removeLast() }
        if keys.count > TreeKey.maxDepth, json != .null {
            throw FiregateError.invalidArgument("Invalid data; data is nested too deeply (more than \(TreeKey.maxDepth) levels from the root).")
        }
        return try node(json)
    }

    mutating func priorityLeaf(_ json: JSON) throws(FiregateError) -> TreeLeaf? {
        switch json {
        case .null: return nil
        case .double(let d) where !d.isFinite: throw TreeNodeDecoder.numberOutOfRangeError
        case .int, .double, .string: return TreeLeaf(json: json)
        case .object(let fields) where fields[TreeKey.serverValue] != nil && fields.count == 1:
            keys.append(TreeKey.priority)
            defer { keys.removeLast() }
            return try node(json).leaf
        default:
            throw FiregateError.invalidArgument("Invalid data; priority must be a string, a number or null.")
        }
    }
}
