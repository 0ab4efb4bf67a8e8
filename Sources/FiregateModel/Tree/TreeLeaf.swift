/// A primitive tree value: a boolean, a number (integers kept exact) or a string.
/// Also the type of priorities, which are restricted to numbers and strings.
public enum TreeLeaf: Sendable, Hashable {
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)

    /// The number as a double, for numeric comparisons and arithmetic.
    public var number: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    public var isNumber: Bool { number != nil }

    /// Whether this leaf may serve as a priority (numbers and strings).
    public var isValidPriority: Bool {
        if case .bool = self { return false }
        return true
    }

    /// The leaf as a `JSON` value.
    public var json: JSON {
        switch self {
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        }
    }

    /// The leaf for a primitive `JSON` value; nil for null, arrays and objects.
    public init?(json: JSON) {
        switch json {
        case .bool(let b): self = .bool(b)
        case .int(let i): self = .int(i)
        case .double(let d): self = .double(d)
        case .string(let s): self = .string(s)
        default: return nil
        }
    }
}
