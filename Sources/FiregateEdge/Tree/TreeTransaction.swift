import FiregateModel

/// A declarative tree transaction (`POST /clients/{id}/transaction`): the update function a
/// test can express as data. Applied to the local value at once and rerun against the
/// server's value when sent, with up to 25 retries on conflict, as the SDK does.
struct TreeTransaction: Sendable {
    enum Operation: Sendable {
        case increment(TreeLeaf)
        case compareAndSet(expect: TreeNode, set: TreeNode)
        /// Adds `value` under a new push id.
        case append(TreeNode)
        case setIfAbsent(TreeNode)
        case max(TreeLeaf)
        case min(TreeLeaf)
    }

    static let maxRetries = 25
    static let operations = ["increment", "compareAndSet", "append", "setIfAbsent", "max", "min"]

    let operation: Operation
    let name: String
    /// The key an `append` adds, chosen once by the client so every run adds the same child.
    var pushKey = ""

    /// Parses the body's one operation member.
    init(json: JSON, at path: TreePath) throws(FiregateError) {
        let present = TreeTransaction.operations.filter { json[$0] != nil }
        guard present.count == 1, let name = present.first, let argument = json[name] else {
            throw .invalidArgument("A transaction takes exactly one of \(TreeTransaction.operations.joined(separator: ", ")).")
        }
        self.name = name
        func number(_ value: JSON) throws(FiregateError) -> TreeLeaf {
            guard let leaf = TreeLeaf(json: value), leaf.isNumber else { throw .invalidArgument("\(name) takes a number.") }
            return leaf
        }
        func node(_ value: JSON?, _ what: String) throws(FiregateError) -> TreeNode {
            guard let value else { throw .invalidArgument("\(name) needs \(what).") }
            return try TreeNodeDecoder.decode(value, at: path, serverValues: nil)
        }
        switch name {
        case "increment": operation = .increment(try number(argument))
        case "max": operation = .max(try number(argument))
        case "min": operation = .min(try number(argument))
        case "compareAndSet":
            guard case .object = argument else { throw .invalidArgument("compareAndSet takes {\"expect\": …, \"set\": …}.") }
            operation = .compareAndSet(expect: try node(argument["expect"], "\"expect\""), set: try node(argument["set"], "\"set\""))
        case "append": operation = .append(try node(argument, "a value"))
        default: operation = .setIfAbsent(try node(argument, "a value"))
        }
    }

    /// The new value for `current`, or nil to abort (committed false, nothing written).
    func apply(to current: TreeNode) -> TreeNode? {
        switch operation {
        case .increment(let delta):
            return TreeNode(leaf: TreeServerValues.increment(current.leaf, by: delta.json), priority: current.priority)
        case .compareAndSet(let expect, let value):
            return current.withoutPriorities == expect.withoutPriorities ? value : nil
        case .append(let value):
            var node = current.children == nil ? TreeNode.empty : current
            node.set(value, at: TreePath(keys: [pushKey]))
            return node
        case .setIfAbsent(let value):
            return current.isEmpty ? value : nil
        case .max(let bound):
            if let number = current.leaf?.number, number >= bound.number! { return nil }
            return TreeNode(leaf: bound)
        case .min(let bound):
            if let number = current.leaf?.number, number <= bound.number! { return nil }
            return TreeNode(leaf: bound)
        }
    }
}
