import FiregateModel

/// What one stream event tells a client, before framing: replace the value at a path relative
/// to the stream's location (`put`), or replace several children under it (`patch`).
public enum TreeStreamUpdate: Sendable, Equatable {
    case put(TreePath, TreeNode)
    case patch(TreePath, [TreePatchEntry])

    /// `{"path":"/a","data":…}` with the data in `format`.
    public func payload(format: TreeFormat) -> [UInt8] {
        var out: [UInt8] = Array(#"{"path":"#.utf8)
        switch self {
        case .put(let path, let node):
            JSONWriter.writeString(path.description, into: &out)
            out.append(contentsOf: #","data":"#.utf8)
            TreeNodeWriter.write(node, format: format, style: .compact, into: &out)
        case .patch(let path, let entries):
            JSONWriter.writeString(path.description, into: &out)
            out.append(contentsOf: #","data":"#.utf8)
            var fields: [(String, TreeNodeWriter.Member)] = entries.map { ($0.path.joined, .node($0.node)) }
            TreeNodeWriter.writeObject(&fields, format: format, style: .compact, indent: 0, into: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    public var kind: TreeStreamFrame.Kind {
        switch self {
        case .put: .put
        case .patch: .patch
        }
    }
}
