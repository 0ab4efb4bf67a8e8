/// How a tree value is rendered as JSON.
public enum TreeFormat: Sendable, Hashable {
    /// What clients read: no priorities, objects with keys "0"…"n" as arrays when dense enough.
    case plain
    /// `format=export`: priorities as `.priority`, prioritised leaves as `{".value":…,".priority":…}`,
    /// never arrays.
    case export
}

/// Serialises `TreeNode`s straight to UTF-8 JSON, children in key order.
public enum TreeNodeWriter {
    public static func bytes(_ node: TreeNode, format: TreeFormat = .plain, style: JSONWriter.Style = .compact) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(node, format: format, style: style, into: &out)
        return out
    }

    public static func string(_ node: TreeNode, format: TreeFormat = .plain, style: JSONWriter.Style = .compact) -> String {
        String(decoding: bytes(node, format: format, style: style), as: UTF8.self)
    }

    public static func write(_ node: TreeNode, format: TreeFormat, style: JSONWriter.Style, indent: Int = 0, into out: inout [UInt8]) {
        switch node.content {
        case .empty:
            out.append(contentsOf: "null".utf8)
        case .leaf(let leaf):
            if format == .export, let priority = node.priority {
                var fields: [(String, Member)] = [(TreeKey.value, .leaf(leaf)), (TreeKey.priority, .leaf(priority))]
                writeObject(&fields, format: format, style: style, indent: indent, into: &out)
            } else {
                writeLeaf(leaf, into: &out)
            }
        case .children(let kids):
            if format == .plain, arrayLength(kids) != nil {
                writeArray(kids, style: style, indent: indent, into: &out)
                return
            }
            var fields: [(String, Member)] = kids.map { ($0.key, .node($0.value)) }
            if format == .export, let priority = node.priority { fields.append((TreeKey.priority, .leaf(priority))) }
            writeObject(&fields, format: format, style: style, indent: indent, into: &out)
        }
    }

    /// An object member: a child node or a pseudo-key's leaf.
    public enum Member {
        case node(TreeNode)
        case leaf(TreeLeaf)
        case literal(Bool)
    }

    /// Writes `fields` as one JSON object in the given order.
    public static func writeObject(_ fields: inout [(String, Member)], format: TreeFormat, style: JSONWriter.Style, indent: Int, into out: inout [UInt8]) {
        if fields.isEmpty { out.append(contentsOf: "{}".utf8); return }
        out.append(UInt8(ascii: "{"))
        for (i, (key, member)) in fields.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            if style == .pretty { newline(&out, indent + 1) }
            JSONWriter.writeString(key, into: &out)
            out.append(contentsOf: (style == .pretty ? " : " : ":").utf8)
            switch member {
            case .node(let child): write(child, format: format, style: style, indent: indent + 1, into: &out)
            case .leaf(let leaf): writeLeaf(leaf, into: &out)
            case .literal(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
            }
        }
        if style == .pretty { newline(&out, indent) }
        out.append(UInt8(ascii: "}"))
    }

    static func writeArray(_ kids: TreeChildren, style: JSONWriter.Style, indent: Int, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        var next = 0
        for (key, child) in kids {
            let index = Int(key)!
            while next <= index {
                if next > 0 { out.append(UInt8(ascii: ",")) }
                if style == .pretty { newline(&out, indent + 1) }
                if next == index {
                    write(child, format: .plain, style: style, indent: indent + 1, into: &out)
                } else {
                    out.append(contentsOf: "null".utf8)
                }
                next += 1
            }
        }
        if style == .pretty { newline(&out, indent) }
        out.append(UInt8(ascii: "]"))
    }

    public static func writeLeaf(_ leaf: TreeLeaf, into out: inout [UInt8]) {
        switch leaf {
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d): out.append(contentsOf: JSONWriter.formatNumber(d).utf8)
        case .string(let s): JSONWriter.writeString(s, into: &out)
        }
    }

    /// The array length when these children read as an array: every key `0` or `[1-9][0-9]*`
    /// and the largest key below twice the count (JS SDK `ChildrenNode.val`).
    public static func arrayLength(_ kids: TreeChildren) -> Int? {
        var maxKey = 0
        for key in kids.keys {
            guard let index = arrayIndex(key) else { return nil }
            maxKey = max(maxKey, index)
        }
        return maxKey < 2 * kids.count ? maxKey + 1 : nil
    }

    static func arrayIndex(_ key: String) -> Int? {
        let utf8 = key.utf8
        guard let first = utf8.first, utf8.count <= 15 else { return nil }
        if first == UInt8(ascii: "0") { return utf8.count == 1 ? 0 : nil }
        var value = 0
        for byte in utf8 {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    /// `shallow=true`: a leaf as itself, an object as `{"key":true,…}`.
    public static func shallowBytes(_ node: TreeNode, style: JSONWriter.Style) -> [UInt8] {
        guard let kids = node.children else { return bytes(node, format: .plain, style: style) }
        var fields: [(String, Member)] = kids.map { ($0.key, .literal(true)) }
        var out: [UInt8] = []
        writeObject(&fields, format: .plain, style: style, indent: 0, into: &out)
        return out
    }

    static func newline(_ out: inout [UInt8], _ indent: Int) {
        out.append(0x0A)
        for _ in 0..<indent { out.append(contentsOf: "  ".utf8) }
    }
}
