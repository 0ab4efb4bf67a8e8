/// What resolving server values (`{".sv":"timestamp"}`, `{".sv":{"increment":n}}`) needs:
/// the server time and the value currently stored at a location.
public struct TreeServerValues {
    public let nowMillis: Int64
    public let current: (TreePath) -> TreeNode

    public init(nowMillis: Int64, current: @escaping (TreePath) -> TreeNode) {
        self.nowMillis = nowMillis
        self.current = current
    }

    /// The value a server value placeholder stands for at `path`.
    func resolve(_ spec: JSON, at path: TreePath) throws(FiregateError) -> TreeLeaf {
        try TreeServerValues.validate(spec)
        if spec == .string("timestamp") { return .int(nowMillis) }
        guard let delta = spec["increment"] else { throw TreeServerValues.unknown }
        let existing = path.isPriority
            ? current(TreePath(keys: Array(path.keys.dropLast()))).priority
            : current(path).leaf
        let sum = TreeServerValues.increment(existing, by: delta)
        if case .double(let d) = sum, !d.isFinite { throw TreeNodeDecoder.numberOutOfRangeError }
        return sum
    }

    /// Throws unless `spec` is a server value this server knows.
    static func validate(_ spec: JSON) throws(FiregateError) {
        switch spec {
        case .string("timestamp"): return
        case .object(let fields) where fields.count == 1:
            switch fields["increment"] {
            case .int?: return
            case .double(let d)?:
                guard d.isFinite else { throw TreeNodeDecoder.numberOutOfRangeError }
                return
            default: throw unknown
            }
        default: throw unknown
        }
    }

    static let unknown = FiregateError.invalidArgument("Invalid data; unsupported server value. Use {\".sv\":\"timestamp\"} or {\".sv\":{\"increment\":<number>}}.")

    /// `existing + delta`; a non-number becomes `delta`. Integers stay integers unless the sum
    /// overflows 64 bits or either side is a double, as production does.
    public static func increment(_ existing: TreeLeaf?, by delta: JSON) -> TreeLeaf {
        let addend: TreeLeaf = delta == .null ? .int(0) : (TreeLeaf(json: delta) ?? .int(0))
        switch (existing, addend) {
        case let (.int(a)?, .int(b)):
            let (sum, overflow) = a.addingReportingOverflow(b)
            return overflow ? .double(Double(a) + Double(b)) : .int(sum)
        case let (e?, d) where e.isNumber:
            return .double(e.number! + d.number!)
        default:
            return addend
        }
    }
}
