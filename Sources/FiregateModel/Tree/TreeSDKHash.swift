import Foundation

/// The hash the Realtime Database SDKs keep of a cached server value (the `h` of a listen, and
/// of a transaction's put): base64 of SHA-1 over a canonical text of the value, children in
/// priority order. The empty value hashes to "" (docs/wire/realtime-database.md, The hash).
///
/// - leaf: `[priority:<p>:]<type>:<value>`, a number as its IEEE-754 double in 16 lowercase
///   hex digits, `p` as `number:<hex>` or `string:<text>`;
/// - children: `[priority:<p>:]` then `:<key>:<child hash>` for each child whose hash is not "".
public enum TreeSDKHash {
    public static func of(_ node: TreeNode) -> String {
        var text = ""
        if let priority = node.priority { text += "priority:" + priorityText(priority) + ":" }
        switch node.content {
        case .empty:
            return ""
        case .leaf(let leaf):
            text += leafText(leaf)
        case .children(let children):
            let ordered = children.storage.elements.sorted { a, b in
                let byPriority = TreeValueOrder.comparePriorities(a.value.priority, b.value.priority)
                return byPriority != 0 ? byPriority < 0 : TreeKeyOrder.less(a.key, b.key)
            }
            for (key, child) in ordered {
                let hash = of(child)
                if !hash.isEmpty { text += ":" + key + ":" + hash }
            }
            if text.isEmpty { return "" }
        }
        return Data(SHA1.hash(Array(text.utf8))).base64EncodedString()
    }

    static func leafText(_ leaf: TreeLeaf) -> String {
        switch leaf {
        case .bool(let value): "boolean:\(value)"
        case .int, .double: "number:" + doubleText(leaf.number!)
        case .string(let value): "string:" + value
        }
    }

    static func priorityText(_ priority: TreeLeaf) -> String {
        if let number = priority.number { return "number:" + doubleText(number) }
        if case .string(let text) = priority { return "string:" + text }
        return leafText(priority)
    }

    /// The double's bits, big-endian, as 16 lowercase hex digits (the SDK's `doubleToIEEE754String`).
    static func doubleText(_ value: Double) -> String {
        let hex = String(value.bitPattern, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
