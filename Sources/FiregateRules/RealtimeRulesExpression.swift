/// A Realtime Database rule expression (docs/wire/security-rules.md: Variables, Expressions): JavaScript-like,
/// with `===`, regex literals for `matches`, `$location` variables and snapshot methods.
public indirect enum RealtimeRulesExpression: Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case regex(pattern: String, caseInsensitive: Bool)
    case identifier(String)
    case member(RealtimeRulesExpression, String)
    /// `a[b]`: a method named by a string literal (`root['exists']()`), or a property.
    case index(RealtimeRulesExpression, RealtimeRulesExpression)
    case call(RealtimeRulesExpression, [RealtimeRulesExpression])
    case array([RealtimeRulesExpression])
    case unary(String, RealtimeRulesExpression)
    case binary(String, RealtimeRulesExpression, RealtimeRulesExpression)
    case conditional(RealtimeRulesExpression, RealtimeRulesExpression, RealtimeRulesExpression)
}

/// Parses one rule string. What the rules language refuses at load time — assignments, `;`,
/// `**`, a regex with flags other than `i`, unknown identifiers — is an error here.
struct RealtimeRulesParser {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var depth = 0
    /// `$` variables in scope at the rule's location.
    private let variables: Set<String>

    static let knownIdentifiers: Set<String> = ["auth", "now", "root", "data", "newData", "query"]

    static func parse(_ source: String, variables: Set<String>) throws(RulesError) -> RealtimeRulesExpression {
        var parser = RealtimeRulesParser(scalars: Array(source.unicodeScalars), variables: variables)
        let expression = try parser.expression()
        parser.skipSpace()
        guard parser.index == parser.scalars.count else { throw parser.error("Unexpected '\(parser.rest)'") }
        return expression
    }

    private init(scalars: [Unicode.Scalar], variables: Set<String>) {
        self.scalars = scalars
        self.variables = variables
    }

    private var rest: String { String(String.UnicodeScalarView(scalars[index...].prefix(20))) }

    private func error(_ message: String) -> RulesError {
        RulesError("\(message) at character \(index + 1).", at: RulesPosition(line: 1, column: index + 1))
    }

    private mutating func skipSpace() {
        while index < scalars.count, scalars[index].properties.isWhitespace { index += 1 }
    }

    /// Consumes `text` (after blanks) if it comes next; an operator is not the start of a longer one.
    private mutating func accept(_ text: String, notFollowedBy: String = "") -> Bool {
        skipSpace()
        let symbol = Array(text.unicodeScalars)
        guard index + symbol.count <= scalars.count, Array(scalars[index..<index + symbol.count]) == symbol else { return false }
        if index + symbol.count < scalars.count, notFollowedBy.unicodeScalars.contains(scalars[index + symbol.count]) { return false }
        index += symbol.count
        return true
    }

    private mutating func expect(_ text: String) throws(RulesError) {
        guard accept(text) else { throw error("Expected '\(text)'") }
    }

    mutating func expression() throws(RulesError) -> RealtimeRulesExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 200 else { throw error("The rule nests too deeply") }
        let condition = try binary(0)
        guard accept("?") else { return condition }
        let yes = try expression()
        try expect(":")
        return .conditional(condition, yes, try expression())
    }

    /// Levels, loosest first; `===`/`!==` mean `==`/`!=`.
    private static let levels: [[(String, String)]] = [
        [("||", "||")], [("&&", "&&")],
        [("===", "=="), ("!==", "!="), ("==", "=="), ("!=", "!=")],
        [("<=", "<="), (">=", ">="), ("<", "<"), (">", ">")],
        [("+", "+"), ("-", "-")], [("*", "*"), ("/", "/"), ("%", "%")],
    ]

    private mutating func binary(_ level: Int) throws(RulesError) -> RealtimeRulesExpression {
        guard level < RealtimeRulesParser.levels.count else { return try unary() }
        var left = try binary(level + 1)
        while true {
            skipSpace()
            if accept("**") || (level == 2 && accept("=", notFollowedBy: "=")) { throw error("Unsupported operator") }
            let next = RealtimeRulesParser.levels[level].first { op in accept(op.0, notFollowedBy: op.0 == "*" ? "*" : "=") }
            guard let (_, op) = next else { return left }
            left = .binary(op, left, try binary(level + 1))
        }
    }

    private mutating func unary() throws(RulesError) -> RealtimeRulesExpression {
        if accept("!", notFollowedBy: "=") { return .unary("!", try nested { (p: inout RealtimeRulesParser) throws(RulesError) in try p.unary() }) }
        if accept("-") { return .unary("-", try nested { (p: inout RealtimeRulesParser) throws(RulesError) in try p.unary() }) }
        return try postfix(try primary())
    }

    private mutating func nested(_ body: (inout RealtimeRulesParser) throws(RulesError) -> RealtimeRulesExpression) throws(RulesError) -> RealtimeRulesExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= 200 else { throw error("The rule nests too deeply") }
        return try body(&self)
    }

    private mutating func postfix(_ base: RealtimeRulesExpression) throws(RulesError) -> RealtimeRulesExpression {
        var value = base
        while true {
            if accept(".") {
                value = .member(value, try name())
            } else if accept("[") {
                let key = try expression()
                try expect("]")
                value = .index(value, key)
            } else if accept("(") {
                var arguments: [RealtimeRulesExpression] = []
                if !accept(")") {
                    repeat { arguments.append(try argument()) } while accept(",")
                    try expect(")")
                }
                value = .call(value, arguments)
            } else {
                return value
            }
        }
    }

    /// A call argument: an expression, or a regex literal (`/re/i`).
    private mutating func argument() throws(RulesError) -> RealtimeRulesExpression {
        skipSpace()
        guard index < scalars.count, scalars[index] == "/" else { return try expression() }
        index += 1
        var pattern = "", escaped = false
        while true {
            guard index < scalars.count else { throw error("Unterminated regular expression") }
            let c = scalars[index]
            index += 1
            if c == "/" && !escaped { break }
            escaped = c == "\\" && !escaped
            pattern.unicodeScalars.append(c)
        }
        var flags = ""
        while index < scalars.count, scalars[index].properties.isAlphabetic {
            flags.unicodeScalars.append(scalars[index])
            index += 1
        }
        guard flags.isEmpty || flags == "i" else { throw error("Unsupported regular expression flags '\(flags)'") }
        if let problem = RealtimeRulesParser.regexProblem(pattern) { throw error(problem) }
        return .regex(pattern: pattern, caseInsensitive: flags == "i")
    }

    /// What the Realtime Database refuses in a regex literal (B4): `^` anywhere but the very
    /// start, `$` anywhere but the very end, an empty alternative.
    static func regexProblem(_ pattern: String) -> String? {
        let chars = Array(pattern.unicodeScalars)
        var inClass = false
        var previous: Unicode.Scalar?  // the character before; an escaped one or a class counts as a literal
        var i = 0
        while i < chars.count {
            let c = chars[i]
            if c == "\\" {
                (previous, i) = ("x", i + 2)
                continue
            }
            if inClass {
                if c == "]" { inClass = false }
                (previous, i) = ("x", i + 1)
                continue
            }
            switch c {
            case "[": inClass = true
            case "^" where i != 0: return "'^' may only start a regular expression"
            case "$" where i != chars.count - 1: return "'$' may only end a regular expression"
            case "|":
                let after = i + 1 < chars.count ? chars[i + 1] : nil
                if previous == nil || previous == "(" || previous == "|" || after == nil || after == ")" || after == "|" {
                    return "A regular expression may not have an empty alternative"
                }
            default: break
            }
            (previous, i) = (c, i + 1)
        }
        return nil
    }

    private mutating func name() throws(RulesError) -> String {
        skipSpace()
        var text = ""
        while index < scalars.count, scalars[index] == "_" || scalars[index] == "$" || scalars[index].properties.isAlphabetic
            || (!text.isEmpty && ("0"..."9").contains(scalars[index])) {
            text.unicodeScalars.append(scalars[index])
            index += 1
        }
        guard !text.isEmpty else { throw error("Expected a name") }
        return text
    }

    private mutating func primary() throws(RulesError) -> RealtimeRulesExpression {
        skipSpace()
        guard index < scalars.count else { throw error("Unexpected end of rule") }
        let c = scalars[index]
        if accept("(") {
            let inner = try expression()
            try expect(")")
            return inner
        }
        if accept("[") {
            var items: [RealtimeRulesExpression] = []
            if !accept("]") {
                repeat { items.append(try expression()) } while accept(",")
                try expect("]")
            }
            return .array(items)
        }
        if c == "'" || c == "\"" {
            index += 1
            var text = ""
            while true {
                guard index < scalars.count else { throw error("Unterminated string") }
                var s = scalars[index]
                index += 1
                if s == c { return .string(text) }
                if s == "\\", index < scalars.count {
                    s = scalars[index]
                    index += 1
                    text += s == "n" ? "\n" : s == "t" ? "\t" : String(s)
                    continue
                }
                text.unicodeScalars.append(s)
            }
        }
        if ("0"..."9").contains(c) || c == "." {
            var text = ""
            while index < scalars.count, ("0"..."9").contains(scalars[index]) || scalars[index] == "." || scalars[index] == "e" {
                text.unicodeScalars.append(scalars[index])
                index += 1
            }
            guard let number = Double(text) else { throw error("Invalid number '\(text)'") }
            return .number(number)
        }
        let word = try name()
        switch word {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default:
            if word.hasPrefix("$") {
                guard variables.contains(word) else { throw error("Unknown variable '\(word)'") }
                return .identifier(word)
            }
            guard RealtimeRulesParser.knownIdentifiers.contains(word) else { throw error("Unknown variable '\(word)'") }
            return .identifier(word)
        }
    }
}
