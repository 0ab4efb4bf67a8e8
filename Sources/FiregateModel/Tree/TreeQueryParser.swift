/// Reads a `TreeQuery` from REST parameters the way production does: `orderBy` and the bounds
/// are JSON (`orderBy="height"`, `startAt="b"`, `equalTo=3`), a bound may carry a tie-break key
/// after a comma (`startAt=3,"k"`), limits are plain integers. Errors carry production's text.
public enum TreeQueryParser {
    /// Parameters that make a request a query.
    public static let names: Set<String> = ["orderBy", "startAt", "startAfter", "endAt", "endBefore", "equalTo", "limitToFirst", "limitToLast"]

    /// The query named by `parameters`, or nil when none of `names` is present.
    public static func parse(_ parameters: [String: String]) throws(FiregateError) -> TreeQuery? {
        guard parameters.keys.contains(where: names.contains) else { return nil }
        guard let orderBy = parameters["orderBy"] else {
            throw FiregateError.invalidArgument("orderBy must be defined when other query parameters are defined")
        }
        let index = try parseIndex(orderBy)
        var query = TreeQuery(index: index)

        if parameters["startAt"] != nil && parameters["startAfter"] != nil {
            throw FiregateError.invalidArgument("startAt and startAfter cannot be used together")
        }
        if parameters["endAt"] != nil && parameters["endBefore"] != nil {
            throw FiregateError.invalidArgument("endAt and endBefore cannot be used together")
        }
        if let text = parameters["startAt"] { query.start = try parseBound(text, index: index, inclusive: true) }
        if let text = parameters["startAfter"] { query.start = try parseBound(text, index: index, inclusive: false) }
        if let text = parameters["endAt"] { query.end = try parseBound(text, index: index, inclusive: true) }
        if let text = parameters["endBefore"] { query.end = try parseBound(text, index: index, inclusive: false) }
        if let text = parameters["equalTo"] {
            guard query.start == nil, query.end == nil else {
                throw FiregateError.invalidArgument("equalTo cannot be used together with startAt, startAfter, endAt or endBefore")
            }
            let bound = try parseBound(text, index: index, inclusive: true)
            query.start = bound
            query.end = bound
        }
        switch (parameters["limitToFirst"], parameters["limitToLast"]) {
        case (_?, _?):
            throw FiregateError.invalidArgument("limitToFirst and limitToLast cannot both be set")
        case (let text?, nil):
            query.limit = .first(try parseLimit(text, name: "limitToFirst"))
        case (nil, let text?):
            query.limit = .last(try parseLimit(text, name: "limitToLast"))
        case (nil, nil):
            break
        }
        return query
    }

    static func parseIndex(_ text: String) throws(FiregateError) -> TreeQuery.Index {
        let invalid = FiregateError.invalidArgument("orderBy must be a valid JSON encoded path")
        guard let json = try? JSONParser.parse(text), case .string(let name) = json else { throw invalid }
        switch name {
        case "$key": return .key
        case "$value": return .value
        case "$priority": return .priority
        default:
            guard !name.hasPrefix("$"), let path = try? TreePath(validating: name, allowPriority: false), !path.isRoot else {
                throw invalid
            }
            return .child(path)
        }
    }

    static func parseBound(_ text: String, index: TreeQuery.Index, inclusive: Bool) throws(FiregateError) -> TreeQuery.Bound {
        let (value, key) = try splitBound(text)
        let leaf = TreeLeaf(json: value)
        switch index {
        case .key:
            guard case .string? = leaf else {
                throw FiregateError.invalidArgument("Provided key index type is invalid, must be string")
            }
            guard key == nil else {
                throw FiregateError.invalidArgument("When ordering by key, a range bound cannot carry a second key argument")
            }
        case .priority:
            if case .bool? = leaf {
                throw FiregateError.invalidArgument("When ordering by priority, a range bound must be a valid priority value (null, a number, or a string)")
            }
        case .value, .child:
            break
        }
        return TreeQuery.Bound(value: leaf, key: key, inclusive: inclusive)
    }

    /// `<json>` or `<json>,<json string>`: the value and the optional tie-break key.
    static func splitBound(_ text: String) throws(FiregateError) -> (JSON, String?) {
        let invalid = FiregateError.invalidArgument("Constraint index field must be a JSON primitive")
        if let json = try? JSONParser.parse(text) {
            guard isPrimitive(json) else { throw invalid }
            return (json, nil)
        }
        let bytes = Array(text.utf8)
        for (i, byte) in bytes.enumerated() where byte == UInt8(ascii: ",") {
            guard let value = try? JSONParser.parse(bytes[..<i]), isPrimitive(value),
                  let keyJSON = try? JSONParser.parse(bytes[(i + 1)...]) else { continue }
            guard case .string(let key) = keyJSON, TreeKey.isValid(key) || key.isEmpty else { throw invalid }
            return (value, key)
        }
        throw invalid
    }

    static func isPrimitive(_ json: JSON) -> Bool {
        switch json {
        case .array, .object: false
        default: true
        }
    }

    static func parseLimit(_ text: String, name: String) throws(FiregateError) -> Int {
        guard let limit = Int(text), limit >= 0 else {
            throw FiregateError.invalidArgument("\(name) must be a non-negative integer")
        }
        return limit
    }
}
