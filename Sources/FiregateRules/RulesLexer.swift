/// One token of a Firestore rules source.
struct RulesToken: Equatable {
    enum Kind: Equatable {
        case identifier(String)
        case int(Int64)
        case float(Double)
        case string(String)
        case bytes([UInt8])
        case symbol(String)
        case end
    }

    let kind: Kind
    let position: RulesPosition
    /// Index of its first scalar in the source (where raw paths are re-read from).
    let offset: Int

    func isSymbol(_ text: String) -> Bool { kind == .symbol(text) }
    func isIdentifier(_ text: String) -> Bool { kind == .identifier(text) }
}

/// Splits a rules source into tokens with their positions; paths (`/a/{b}`, `/x/$(e)`) are read
/// raw by the parser, which knows where one may start (`rawPath`, `matchPattern`).
struct RulesLexer {
    let scalars: [Unicode.Scalar]
    private(set) var index = 0
    private var line = 1
    private var column = 1

    /// Longest symbols first.
    private static let symbols = ["&&", "||", "==", "!=", "<=", ">=", "{", "}", "(", ")", "[", "]", ";", ",", ".", ":", "?", "!",
                                  "=", "<", ">", "+", "-", "*", "/", "%"]

    init(_ source: String) {
        scalars = Array(source.unicodeScalars)
    }

    var position: RulesPosition { RulesPosition(line: line, column: column) }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        index + ahead < scalars.count ? scalars[index + ahead] : nil
    }

    private mutating func advance() {
        if scalars[index] == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
        index += 1
    }

    /// Moves back to `token`'s start (to re-read it raw).
    mutating func rewind(to token: RulesToken) {
        index = token.offset
        line = token.position.line
        column = token.position.column
    }

    mutating func skipTrivia() throws(RulesIssue) {
        while let c = peek() {
            if c == " " || c == "\t" || c == "\n" || c == "\r" {
                advance()
            } else if c == "/", peek(1) == "/" {
                while let c = peek(), c != "\n" { advance() }
            } else if c == "/", peek(1) == "*" {
                let start = position
                advance(); advance()
                while true {
                    guard let c = peek() else { throw RulesIssue("Unterminated comment.", at: start) }
                    if c == "*", peek(1) == "/" {
                        advance(); advance()
                        break
                    }
                    advance()
                }
            } else {
                return
            }
        }
    }

    mutating func next() throws(RulesIssue) -> RulesToken {
        try skipTrivia()
        let start = position, offset = index
        guard let c = peek() else { return RulesToken(kind: .end, position: start, offset: offset) }
        if c == "_" || c.properties.isAlphabetic {
            var name = ""
            while let c = peek(), c == "_" || c.properties.isAlphabetic || ("0"..."9").contains(c) {
                name.unicodeScalars.append(c)
                advance()
            }
            if name == "b", let quote = peek(), quote == "'" || quote == "\"" {
                let text = try string(quote: quote, bytes: true)
                return RulesToken(kind: .bytes(Array(text.utf8)), position: start, offset: offset)
            }
            return RulesToken(kind: .identifier(name), position: start, offset: offset)
        }
        if ("0"..."9").contains(c) { return try number(start: start, offset: offset) }
        if c == "'" || c == "\"" { return RulesToken(kind: .string(try string(quote: c, bytes: false)), position: start, offset: offset) }
        for symbol in RulesLexer.symbols where matches(symbol) {
            for _ in symbol.unicodeScalars { advance() }
            return RulesToken(kind: .symbol(symbol), position: start, offset: offset)
        }
        throw RulesIssue("Unexpected character '\(c)'.", at: start)
    }

    private func matches(_ symbol: String) -> Bool {
        for (ahead, scalar) in symbol.unicodeScalars.enumerated() where peek(ahead) != scalar { return false }
        return true
    }

    private mutating func number(start: RulesPosition, offset: Int) throws(RulesIssue) -> RulesToken {
        var text = ""
        var isFloat = false
        while let c = peek(), ("0"..."9").contains(c) || (c == "." && !isFloat && peek(1).map { ("0"..."9").contains($0) } == true)
            || ((c == "e" || c == "E") && !text.isEmpty) {
            if c == "." || c == "e" || c == "E" { isFloat = true }
            text.unicodeScalars.append(c)
            advance()
            if c == "e" || c == "E", let sign = peek(), sign == "+" || sign == "-" {
                text.unicodeScalars.append(sign)
                advance()
            }
        }
        if isFloat {
            guard let value = Double(text) else { throw RulesIssue("Invalid number \(text).", at: start) }
            return RulesToken(kind: .float(value), position: start, offset: offset)
        }
        guard let value = Int64(text) else { throw RulesIssue("Integer \(text) is out of range.", at: start) }
        return RulesToken(kind: .int(value), position: start, offset: offset)
    }

    /// A quoted string (or bytes literal body) with its escapes: `\\ \' \" \n \t \r \xHH \uHHHH`.
    private mutating func string(quote: Unicode.Scalar, bytes: Bool) throws(RulesIssue) -> String {
        let start = position
        advance()
        var text = ""
        while true {
            guard let c = peek(), c != "\n" else { throw RulesIssue("Unterminated string.", at: start) }
            advance()
            if c == quote { return text }
            guard c == "\\" else {
                text.unicodeScalars.append(c)
                continue
            }
            guard let escaped = peek() else { throw RulesIssue("Unterminated string.", at: start) }
            advance()
            switch escaped {
            case "n": text += "\n"
            case "t": text += "\t"
            case "r": text += "\r"
            case "x", "u":
                let digits = escaped == "x" ? 2 : 4
                var code: UInt32 = 0
                for _ in 0..<digits {
                    guard let h = peek(), let v = UInt32(String(h), radix: 16) else {
                        throw RulesIssue("Invalid escape in string.", at: position)
                    }
                    code = code * 16 + v
                    advance()
                }
                guard let scalar = Unicode.Scalar(code) else { throw RulesIssue("Invalid escape in string.", at: position) }
                text.unicodeScalars.append(scalar)
            default: text.unicodeScalars.append(escaped)
            }
        }
    }

    // MARK: Raw paths

    /// Characters a raw path segment may hold besides letters and digits.
    private static let segmentPunctuation: Set<Unicode.Scalar> = ["_", "-", ".", "~", "%", "@", "+", "="]

    /// A `match` pattern from the current position: `/seg/{var}/{rest=**}`.
    mutating func matchPattern() throws(RulesIssue) -> [MatchSegment] {
        try skipTrivia()
        var segments: [MatchSegment] = []
        while peek() == "/" {
            advance()
            let start = position
            if peek() == "{" {
                advance()
                var name = ""
                while let c = peek(), c != "}", c != "=", c != "\n" {
                    name.unicodeScalars.append(c)
                    advance()
                }
                var recursive = false
                if peek() == "=" {
                    advance()
                    guard peek() == "*", peek(1) == "*" else { throw RulesIssue("Expected '**' after '=' in a wildcard.", at: position) }
                    advance(); advance()
                    recursive = true
                }
                guard peek() == "}" else { throw RulesIssue("Unterminated wildcard in the match path.", at: start) }
                advance()
                guard isIdentifier(name) else { throw RulesIssue("Invalid wildcard name '\(name)'.", at: start) }
                segments.append(recursive ? .recursive(name) : .variable(name))
            } else {
                var text = ""
                while let c = peek(), c.properties.isAlphabetic || ("0"..."9").contains(c) || RulesLexer.segmentPunctuation.contains(c)
                    || c == "(" || c == ")" {
                    text.unicodeScalars.append(c)
                    advance()
                }
                guard !text.isEmpty else { throw RulesIssue("Empty segment in the match path.", at: start) }
                segments.append(.literal(text))
            }
        }
        return segments
    }

    private func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || first.properties.isAlphabetic else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || $0.properties.isAlphabetic || ("0"..."9").contains($0) }
    }

    /// A raw path in an expression from the current position (a `/`): its segments, each text
    /// or an interpolation's source (`$(expr)`, parsed by the caller) with its position.
    mutating func rawPath() throws(RulesIssue) -> [RawPathSegment] {
        var segments: [RawPathSegment] = []
        while peek() == "/" {
            advance()
            let start = position
            if peek() == "$", peek(1) == "(" {
                advance(); advance()
                let inner = position, from = index
                var depth = 1
                while depth > 0 {
                    guard let c = peek() else { throw RulesIssue("Unterminated $( in a path.", at: start) }
                    if c == "(" { depth += 1 }
                    if c == ")" { depth -= 1 }
                    if depth > 0 { advance() }
                }
                let source = String(String.UnicodeScalarView(scalars[from..<index]))
                advance()
                segments.append(.interpolated(source, inner))
            } else {
                var text = "", depth = 0
                while let c = peek(), c.properties.isAlphabetic || ("0"..."9").contains(c) || RulesLexer.segmentPunctuation.contains(c)
                    || c == "(" || (c == ")" && depth > 0) {
                    if c == "(" { depth += 1 }
                    if c == ")" { depth -= 1 }
                    text.unicodeScalars.append(c)
                    advance()
                }
                guard !text.isEmpty else { throw RulesIssue("Empty segment in a path.", at: start) }
                segments.append(.text(text))
            }
        }
        return segments
    }
}

/// One segment of a `match` pattern.
public enum MatchSegment: Sendable, Hashable {
    case literal(String)
    /// `{name}`: one segment, bound as a string.
    case variable(String)
    /// `{name=**}`: the rest (v1: one or more segments, last) or any run (v2: zero or more), bound as a path.
    case recursive(String)
}

/// One segment of a raw path in an expression, before its interpolations are parsed.
enum RawPathSegment {
    case text(String)
    case interpolated(String, RulesPosition)
}
