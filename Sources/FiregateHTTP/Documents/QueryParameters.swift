import FiregateBackend
import FiregateModel
import Hummingbird

/// Query-string parameters with proto field names normalised to camelCase
/// (`update_mask.field_paths` → `updateMask.fieldPaths`), repeats kept.
struct QueryParameters {
    private var values: [String: [String]] = [:]

    init(_ request: Request) throws(FiregateError) {
        for (name, value) in try request.queryItems() {
            let normalized = name.split(separator: ".", omittingEmptySubsequences: false).map { QueryParameters.camelCase(String($0)) }.joined(separator: ".")
            values[normalized, default: []].append(value)
        }
    }

    static func camelCase(_ snake: String) -> String {
        guard snake.contains("_") else { return snake }
        var out = ""
        var upper = false
        for ch in snake {
            if ch == "_" { upper = true; continue }
            out.append(upper ? Character(ch.uppercased()) : ch)
            upper = false
        }
        return out
    }

    func all(_ name: String) -> [String] { values[name] ?? [] }
    func first(_ name: String) -> String? { values[name]?.first }

    func bool(_ name: String) throws(FiregateError) -> Bool? {
        guard let text = first(name) else { return nil }
        switch text.lowercased() {
        case "true", "1": return true
        case "false", "0", "": return false
        default: throw .invalidArgument("Invalid value for \(name): \"\(text)\" is not a boolean.")
        }
    }

    func int(_ name: String) throws(FiregateError) -> Int? {
        guard let text = first(name) else { return nil }
        guard let n = Int(text), n >= 0 else { throw .invalidArgument("Invalid value for \(name): \"\(text)\".") }
        return n
    }

    func timestamp(_ name: String) throws(FiregateError) -> Timestamp? {
        guard let text = first(name) else { return nil }
        guard let t = Timestamp(rfc3339: text) else { throw .invalidArgument("Invalid value for \(name): \"\(text)\" is not an RFC 3339 timestamp.") }
        return t
    }

    /// `currentDocument.exists` / `currentDocument.updateTime`; at most one of them.
    func precondition() throws(FiregateError) -> Precondition {
        let precondition = Precondition(exists: try bool("currentDocument.exists"), updateTime: try timestamp("currentDocument.updateTime"))
        if precondition.exists != nil, precondition.updateTime != nil {
            throw .invalidArgument("A precondition can set exists or updateTime, not both.")
        }
        return precondition
    }

    /// `mask.fieldPaths` as field paths, or nil when absent.
    func mask(_ name: String = "mask.fieldPaths") throws(FiregateError) -> [FieldPath]? {
        let paths = all(name)
        guard !paths.isEmpty else { return nil }
        return try paths.map { text throws(FiregateError) in try FieldPath.parse(text) }
    }

    /// `transaction` / `readTime` from the query string (GET/list reads).
    func consistency() throws(FiregateError) -> ReadConsistency {
        if let tx = first("transaction") {
            if first("readTime") != nil { throw .invalidArgument("transaction and readTime cannot both be set.") }
            return .transaction(tx)
        }
        if let time = try timestamp("readTime") { return .readTime(time) }
        return .latest
    }
}

extension JSON {
    /// The consistency selector of a request body: `transaction`, `newTransaction` or `readTime`.
    func consistency() throws(FiregateError) -> ReadConsistency {
        var selectors = 0
        var result = ReadConsistency.latest
        if let tx = member("transaction"), tx != .null {
            guard let id = tx.stringValue else { throw .invalidArgument("transaction must be a base64 string.") }
            result = .transaction(id)
            selectors += 1
        }
        if let options = member("newTransaction"), options != .null {
            result = .newTransaction(try TransactionOptions(json: options))
            selectors += 1
        }
        if let time = member("readTime"), time != .null {
            guard let text = time.stringValue, let t = Timestamp(rfc3339: text) else {
                throw .invalidArgument("readTime must be an RFC 3339 timestamp.")
            }
            result = .readTime(t)
            selectors += 1
        }
        guard selectors <= 1 else { throw .invalidArgument("Only one of transaction, newTransaction or readTime may be set.") }
        return result
    }
}

extension TransactionOptions {
    init(json: JSON) throws(FiregateError) {
        let readOnlyGiven = json.member("readOnly").map { $0 != .null } ?? false
        let readWriteGiven = json.member("readWrite").map { $0 != .null } ?? false
        if readOnlyGiven && readWriteGiven { throw .invalidArgument("Transaction options can be readOnly or readWrite, not both.") }
        if let readOnly = json.member("readOnly"), readOnly != .null {
            var time: Timestamp?
            if let t = readOnly.member("readTime"), t != .null {
                guard let text = t.stringValue, let parsed = Timestamp(rfc3339: text) else {
                    throw .invalidArgument("readOnly.readTime must be an RFC 3339 timestamp.")
                }
                time = parsed
            }
            self = .readOnly(readTime: time)
        } else {
            let retry = json.member("readWrite")?.member("retryTransaction")?.stringValue
            self = .readWrite(retrying: retry)
        }
    }
}
