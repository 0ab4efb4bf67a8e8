import OrderedCollections
extension JSON {
    /// An object member by its camelCase name, also found under its snake_case spelling
    /// (proto3 JSON parsers accept both).
    public func member(_ camelName: String) -> JSON? {
        guard case .object(let fields) = self else { return nil }
        if let value = fields[camelName] { return value }
        guard camelName.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return nil }
        return fields[JSON.snakeCase(camelName)]
    }

    /// Field names are ASCII: bytes, not Characters (whose case properties are Unicode lookups).
    static func snakeCase(_ camel: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(camel.utf8.count + 4)
        for byte in camel.utf8 {
            if byte >= UInt8(ascii: "A"), byte <= UInt8(ascii: "Z") {
                out.append(UInt8(ascii: "_"))
                out.append(byte + 32)
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// An integer carried as a JSON number, a decimal string, or an Int32Value wrapper `{"value":n}`.
    public var integerLike: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d == d.rounded() && abs(d) < 9.2e18: return Int64(d)
        case .string(let s): return Int64(s)
        case .object: return self["value"]?.integerLike
        default: return nil
        }
    }
}

extension JSON {
    /// An object from (name, value) pairs in order; a repeated name keeps its first value.
    public static func members(_ pairs: [(String, JSON)]) -> JSON {
        var members = OrderedDictionary<String, JSON>()
        for (name, value) in pairs where members[name] == nil { members[name] = value }
        return .object(members)
    }
}
