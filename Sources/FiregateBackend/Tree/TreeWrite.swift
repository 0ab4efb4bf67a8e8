import FiregateModel
import FiregateStore

/// A value to write, decoded and validated before it reaches the namespace. Values holding
/// server values stay JSON until the namespace resolves them against the current tree.
public enum TreeWriteValue: Sendable {
    case node(TreeNode)
    case needsServerValues(JSON)

    /// Validates `json` for writing at `path` (absolute), resolving nothing yet.
    public static func prepare(_ json: JSON, at path: TreePath) throws(FiregateError) -> TreeWriteValue {
        do {
            return .node(try TreeNodeDecoder.decode(json, at: path, serverValues: nil))
        } catch where error == TreeNodeDecoder.needsServerValues {
            return .needsServerValues(json)
        }
    }
}

/// One write to a namespace, as the REST methods ask for it.
public struct TreeWriteRequest: Sendable {
    public enum Operation: Sendable {
        /// PUT (and DELETE, with an empty node): replace the value at the path.
        case set(TreeWriteValue)
        /// PATCH: replace each entry's path (relative to the request path); none may be an
        /// ancestor of another.
        case update([TreeUpdateEntry])
        /// POST: add the value under a new push id.
        case push(TreeWriteValue)

        /// For the operations log: set, delete, update or push.
        public var name: String {
            switch self {
            case .set(.node(let node)) where node.isEmpty: "delete"
            case .set: "set"
            case .update: "update"
            case .push: "push"
            }
        }
    }

    public var path: TreePath
    public var operation: Operation
    /// `if-match`: write only if the current value's ETag is this.
    public var ifMatch: String?
    /// A socket transaction's put: write only if the current value's SDK hash is this.
    public var ifSDKHash: String?
    /// Report the ETag of the location after the write.
    public var wantsETag: Bool
    /// On replicas, a reaper's progress through a dead connection's onDisconnect operations,
    /// stored in the write's own transaction.
    public var progress: DisconnectProgress?
    /// On replicas, an edge client's queued write sent by the client's replica: stored with
    /// the write, with its answer, so the write is made once (see `QueuedWriteReceipt`).
    public var receipt: QueuedWriteReceipt?

    public init(path: TreePath, operation: Operation, ifMatch: String? = nil, ifSDKHash: String? = nil, wantsETag: Bool = false) {
        self.path = path
        self.operation = operation
        self.ifMatch = ifMatch
        self.ifSDKHash = ifSDKHash
        self.wantsETag = wantsETag
    }
}

/// One entry of a multi-path update.
public struct TreeUpdateEntry: Sendable {
    public let path: TreePath
    public let value: TreeWriteValue

    public init(path: TreePath, value: TreeWriteValue) {
        self.path = path
        self.value = value
    }

    /// A multi-path update's object as (relative path, value) pairs, unvalidated values; each
    /// key is a non-empty relative path (`a`, `a/b`).
    public static func relativePaths(of object: JSON) throws(FiregateError) -> [(TreePath, JSON)] {
        guard case .object(let fields) = object else {
            throw FiregateError.invalidArgument("Invalid data; an update requires a JSON object whose keys are the children or paths to update.")
        }
        var entries: [(TreePath, JSON)] = []
        entries.reserveCapacity(fields.count)
        for (key, json) in fields {
            let relative: TreePath
            do {
                relative = try TreePath(validating: key)
            } catch {
                throw TreeNodeDecoder.invalidKeyError
            }
            guard !relative.isRoot else { throw TreeNodeDecoder.invalidKeyError }
            entries.append((relative, json))
        }
        return entries
    }

    /// `relativePaths(of:)` validated for writing under `path`: server values stay unresolved.
    public static func prepare(_ object: JSON, under path: TreePath) throws(FiregateError) -> [TreeUpdateEntry] {
        try checkedRelativePaths(of: object, under: path).prepared
    }

    /// The entries as given (JSON, for an onDisconnect to resolve later) once each has been
    /// validated for writing under `path`, and their prepared form.
    public static func checkedRelativePaths(of object: JSON, under path: TreePath) throws(FiregateError)
        -> (raw: [(TreePath, JSON)], prepared: [TreeUpdateEntry])
    {
        let raw = try relativePaths(of: object)
        var prepared: [TreeUpdateEntry] = []
        prepared.reserveCapacity(raw.count)
        for (relative, json) in raw {
            prepared.append(TreeUpdateEntry(path: relative, value: try TreeWriteValue.prepare(json, at: path.appending(relative))))
        }
        return (raw, prepared)
    }

    /// The error for an update whose paths overlap.
    static func overlapError(_ a: TreePath, _ b: TreePath) -> FiregateError {
        .invalidArgument("Invalid data; path \(a) is an ancestor of \(b) in the same update.")
    }
}

/// What a write did.
public enum TreeWriteOutcome: Sendable {
    case written(TreeWriteResult)
    /// `if-match` (or the SDK hash) did not match: nothing was written; here is what is there,
    /// with its tag of the kind asked for.
    case conflict(current: TreeNode, etag: String)
}

/// A successful write.
public struct TreeWriteResult: Sendable {
    /// Where the value now is (for a push, the new child).
    public let path: TreePath
    /// The value stored at `path` (set and push).
    public let value: TreeNode
    /// The stored entries (update), paths relative to the request path.
    public let entries: [TreePatchEntry]
    /// The new child's key (push).
    public let pushKey: String?
    /// The location's ETag after the write, when asked for.
    public let etag: String?
}
