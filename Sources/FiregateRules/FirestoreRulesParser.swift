/// Parses a Firestore rules source (docs/wire/security-rules.md: File and matching to Operators) into a `FirestoreRuleset`,
/// or the issues that keep it from loading, each with its line and column.
///
/// Recursive descent over `RulesLexer`'s tokens, one function per precedence level of A6; raw
/// paths (`match` patterns and `/a/$(b)` in expressions) are re-read from the source. Nesting is
/// bounded (`maxDepth`) so a pathological source is an issue, not a stack overflow.
public struct FirestoreRulesParser {
    private var lexer: RulesLexer
    private var token: RulesToken
    private var depth = 0
    private var warnings: [RulesIssue] = []

    static let maxDepth = 200
    /// Nested `match` blocks (A14).
    static let maxMatchDepth = 10

    /// The ruleset and its warnings, or throws the first error.
    public static func parse(_ source: String) throws(RulesIssue) -> (FirestoreRuleset, warnings: [RulesIssue]) {
        var parser = try FirestoreRulesParser(source)
        let ruleset = try parser.ruleset(source)
        return (ruleset, parser.warnings)
    }

    /// One expression on its own (the dry run's and the tests' way in).
    public static func parseExpression(_ source: String) throws(RulesIssue) -> RulesExpression {
        var parser = try FirestoreRulesParser(source)
        let expression = try parser.expression()
        guard parser.token.kind == .end else { throw parser.unexpected("the end of the expression") }
        return expression
    }

    private init(_ source: String) throws(RulesIssue) {
        lexer = RulesLexer(source)
        token = try lexer.next()
    }

    private mutating func advance() throws(RulesIssue) {
        token = try lexer.next()
    }

    private func unexpected(_ expected: String) -> RulesIssue {
        let found: String
        switch token.kind {
        case .end: found = "end of input"
        case .identifier(let name): found = "'\(name)'"
        case .symbol(let symbol): found = "'\(symbol)'"
        case .string(let text): found = "string '\(text)'"
        case .int, .float: found = "a number"
        case .bytes: found = "bytes"
        }
        return RulesIssue("Unexpected \(found); expected \(expected).", at: token.position)
    }

    private mutating func expect(_ symbol: String) throws(RulesIssue) {
        guard token.isSymbol(symbol) else { throw unexpected("'\(symbol)'") }
        try advance()
    }

    private mutating func identifier(_ what: String) throws(RulesIssue) -> String {
        guard case .identifier(let name) = token.kind else { throw unexpected(what) }
        try advance()
        return name
    }

    // MARK: Statements

    private mutating func ruleset(_ source: String) throws(RulesIssue) -> FirestoreRuleset {
        var version = 1
        if token.isIdentifier("rules_version") {
            try advance()
            try expect("=")
            guard case .string(let text) = token.kind, text == "1" || text == "2" else { throw unexpected("'1' or '2'") }
            version = Int(text)!
            try advance()
            if token.isSymbol(";") { try advance() }
        }
        let start = token.position
        guard token.isIdentifier("service") else { throw unexpected("'service'") }
        try advance()
        var name = try identifier("a service name")
        while token.isSymbol(".") {
            try advance()
            name += "." + (try identifier("a service name"))
        }
        guard name == "cloud.firestore" else { throw RulesIssue("Unknown service '\(name)'; expected 'cloud.firestore'.", at: start) }
        let root = try block(pattern: [], position: start, level: 0)
        guard token.kind == .end else { throw RulesIssue("Only one service may be declared in a file.", at: token.position) }
        return FirestoreRuleset(version: version, root: root, source: source)
    }

    /// `{ (match | allow | function)* }`.
    private mutating func block(pattern: [MatchSegment], position: RulesPosition, level: Int) throws(RulesIssue) -> MatchBlock {
        try expect("{")
        var allows: [AllowStatement] = [], functions: [RulesFunction] = [], matches: [MatchBlock] = []
        while !token.isSymbol("}") {
            if token.isIdentifier("match") {
                let at = token.position
                guard level < FirestoreRulesParser.maxMatchDepth else { throw RulesIssue("Match statements nest at most 10 deep.", at: at) }
                lexer.rewind(to: token)
                _ = try lexer.next()  // `match`
                let segments = try lexer.matchPattern()
                guard !segments.isEmpty else { throw RulesIssue("A match needs a path starting with '/'.", at: at) }
                try advance()
                matches.append(try block(pattern: segments, position: at, level: level + 1))
            } else if token.isIdentifier("allow") {
                allows.append(try allow())
            } else if token.isIdentifier("function") {
                functions.append(try function())
            } else {
                throw unexpected("'match', 'allow', 'function' or '}'")
            }
        }
        if !pattern.isEmpty, allows.isEmpty, functions.isEmpty, matches.isEmpty {
            throw RulesIssue("A match block needs at least one match, allow or function.", at: position)
        }
        try advance()
        return MatchBlock(pattern: pattern, allows: allows, functions: functions, matches: matches, position: position)
    }

    /// `allow m1, m2 [: if expr] ;`
    private mutating func allow() throws(RulesIssue) -> AllowStatement {
        let at = token.position
        try advance()
        var methods = Set<RulesMethod>()
        repeat {
            if token.isSymbol(",") { try advance() }
            let nameAt = token.position
            let name = try identifier("a method (read, write, get, list, create, update, delete)")
            guard let named = RulesMethod.named(name) else { throw RulesIssue("Unknown method '\(name)'.", at: nameAt) }
            methods.formUnion(named)
        } while token.isSymbol(",")
        var condition: RulesExpression?
        if token.isSymbol(":") {
            try advance()
            guard token.isIdentifier("if") else { throw unexpected("'if'") }
            try advance()
            condition = try expression()
        }
        if token.isSymbol(";") {
            try advance()
        } else if token.isIdentifier("allow") || token.isIdentifier("match") || token.isIdentifier("function") || token.isSymbol("}") {
            warnings.append(RulesIssue("Missing ';' after the allow statement.", at: token.position, severity: .warning))
        } else {
            throw unexpected("';'")
        }
        return AllowStatement(methods: methods, condition: condition, position: at)
    }

    /// `function name(a, b) { let x = e; return e; }`
    private mutating func function() throws(RulesIssue) -> RulesFunction {
        let at = token.position
        try advance()
        let name = try identifier("a function name")
        try expect("(")
        var parameters: [String] = []
        while !token.isSymbol(")") {
            if !parameters.isEmpty { try expect(",") }
            let paramAt = token.position
            let parameter = try identifier("a parameter name")
            guard !parameters.contains(parameter) else { throw RulesIssue("Parameter '\(parameter)' is declared twice.", at: paramAt) }
            parameters.append(parameter)
        }
        try advance()
        guard parameters.count <= 7 else { throw RulesIssue("A function takes at most 7 arguments.", at: at) }
        try expect("{")
        var bindings: [(name: String, value: RulesExpression)] = []
        while token.isIdentifier("let") {
            let letAt = token.position
            try advance()
            let binding = try identifier("a variable name")
            try expect("=")
            bindings.append((binding, try expression()))
            try expect(";")
            guard bindings.count <= 10 else { throw RulesIssue("A function has at most 10 let bindings.", at: letAt) }
        }
        guard token.isIdentifier("return") else { throw unexpected("'let' or 'return'") }
        try advance()
        let body = try expression()
        if token.isSymbol(";") { try advance() }
        try expect("}")
        return RulesFunction(name: name, parameters: parameters, bindings: bindings, body: body, position: at)
    }

    // MARK: Expressions, lowest precedence first (A6)

    mutating func expression() throws(RulesIssue) -> RulesExpression {
        depth += 1
        defer { depth -= 1 }
        guard depth <= FirestoreRulesParser.maxDepth else { throw RulesIssue("The expression nests too deeply.", at: token.position) }
        let condition = try binary(0)
        guard token.isSymbol("?") else { return condition }
        try advance()
        let yes = try expression()
        try expect(":")
        return .conditional(condition, yes, try expression(), condition.position)
    }

    /// Binary operators by level: `||`, `&&`, `== !=`, `is` (handled in `relation`), `in`, `< <= > >=`, `+ -`, `* / %`.
    private static let levels: [[String]] = [["||"], ["&&"], ["==", "!="], ["in"], ["<", "<=", ">", ">="], ["+", "-"], ["*", "/", "%"]]

    private mutating func binary(_ level: Int) throws(RulesIssue) -> RulesExpression {
        guard level < FirestoreRulesParser.levels.count else { return try unary() }
        var left = try binary(level + 1)
        while true {
            if level == 2, token.isIdentifier("is") {  // `is` binds tighter than ==, looser than in
                try advance()
                let type = try identifier("a type name")
                left = .isType(left, type, left.position)
                continue
            }
            let matched = FirestoreRulesParser.levels[level].first { op in op == "in" ? token.isIdentifier("in") : token.isSymbol(op) }
            guard let op = matched else { return left }
            try advance()
            left = .binary(op, left, try binary(level + 1), left.position)
        }
    }

    private mutating func unary() throws(RulesIssue) -> RulesExpression {
        if token.isSymbol("!") || token.isSymbol("-") {
            let at = token.position
            let op = token.isSymbol("!") ? "!" : "-"
            try advance()
            depth += 1
            defer { depth -= 1 }
            guard depth <= FirestoreRulesParser.maxDepth else { throw RulesIssue("The expression nests too deeply.", at: at) }
            return .unary(op, try unary(), at)
        }
        return try postfix(try primary())
    }

    private mutating func postfix(_ base: RulesExpression) throws(RulesIssue) -> RulesExpression {
        var value = base
        while true {
            let at = token.position
            if token.isSymbol(".") {
                try advance()
                value = .member(value, try identifier("a field or method name"), at)
            } else if token.isSymbol("(") {
                try advance()
                value = .call(value, try arguments(closing: ")"), at)
            } else if token.isSymbol("[") {
                try advance()
                let start: RulesExpression? = token.isSymbol(":") ? nil : try expression()
                if token.isSymbol(":") {
                    try advance()
                    let end: RulesExpression? = token.isSymbol("]") ? nil : try expression()
                    try expect("]")
                    value = .slice(value, start, end, at)
                } else {
                    try expect("]")
                    value = .index(value, start!, at)
                }
            } else {
                return value
            }
        }
    }

    private mutating func arguments(closing: String) throws(RulesIssue) -> [RulesExpression] {
        var items: [RulesExpression] = []
        while !token.isSymbol(closing) {
            if !items.isEmpty {
                try expect(",")
                if token.isSymbol(closing) { break }  // a trailing comma
            }
            items.append(try expression())
        }
        try advance()
        return items
    }

    private mutating func primary() throws(RulesIssue) -> RulesExpression {
        let at = token.position
        switch token.kind {
        case .int(let value):
            try advance()
            return .literal(.int(value), at)
        case .float(let value):
            try advance()
            return .literal(.float(value), at)
        case .string(let text):
            try advance()
            return .literal(.string(text), at)
        case .bytes(let bytes):
            try advance()
            return .literal(.bytes(bytes), at)
        case .identifier("true"):
            try advance()
            return .literal(.bool(true), at)
        case .identifier("false"):
            try advance()
            return .literal(.bool(false), at)
        case .identifier("null"):
            try advance()
            return .literal(.null, at)
        case .identifier(let name):
            try advance()
            return .identifier(name, at)
        case .symbol("("):
            try advance()
            let inner = try expression()
            try expect(")")
            return inner
        case .symbol("["):
            try advance()
            return .list(try arguments(closing: "]"), at)
        case .symbol("{"):
            try advance()
            var entries: [(key: RulesExpression, value: RulesExpression)] = []
            while !token.isSymbol("}") {
                if !entries.isEmpty {
                    try expect(",")
                    if token.isSymbol("}") { break }
                }
                let key = try expression()
                try expect(":")
                entries.append((key, try expression()))
            }
            try advance()
            return .map(entries, at)
        case .symbol("/"):
            lexer.rewind(to: token)
            var parts: [RulesExpression.PathPart] = []
            for segment in try lexer.rawPath() {
                switch segment {
                case .text(let text): parts.append(.text(text))
                case .interpolated(let source, let position):
                    do {
                        parts.append(.interpolated(try FirestoreRulesParser.parseExpression(source)))
                    } catch {
                        throw RulesIssue(error.description, at: RulesPosition(line: position.line + error.position.line - 1,
                                                                              column: error.position.line == 1 ? position.column + error.position.column - 1 : error.position.column))
                    }
                }
            }
            try advance()
            return .path(parts, at)
        default:
            throw unexpected("an expression")
        }
    }
}
