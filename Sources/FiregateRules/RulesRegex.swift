/// A rules regular expression (`matches`, `split`, `replace`) in RE2 syntax, matched by
/// `LinearRegex` in time linear in the input: no pattern makes a rule hang. Patterns and inputs
/// are bounded.
struct RulesRegex {
    static let maxPatternLength = 1_000
    static let maxInputLength = 1 << 20

    let expression: LinearRegex

    init(_ pattern: String, at: RulesPosition) throws(RulesError) {
        guard pattern.count <= RulesRegex.maxPatternLength else {
            throw RulesError("The regular expression is longer than \(RulesRegex.maxPatternLength) characters.", at: at)
        }
        do { expression = try LinearRegex(pattern) } catch {
            throw RulesError("Invalid regular expression '\(pattern)': \(error.message).", at: at)
        }
    }

    func wholeMatch(_ text: String) -> Bool { expression.wholeMatch(text) }

    /// The pieces between non-empty matches.
    func split(_ text: String) -> [String] {
        let scalars = Array(text.unicodeScalars)
        var parts: [String] = [], last = 0
        for match in expression.ranges(in: text) where !match.isEmpty {
            parts.append(String(String.UnicodeScalarView(scalars[last..<match.lowerBound])))
            last = match.upperBound
        }
        parts.append(String(String.UnicodeScalarView(scalars[last...])))
        return parts
    }

    /// Every match replaced by `replacement`, taken literally.
    func replace(_ text: String, with replacement: String) -> String {
        let scalars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView(), last = 0
        for match in expression.ranges(in: text) {
            out.append(contentsOf: scalars[last..<match.lowerBound])
            out.append(contentsOf: replacement.unicodeScalars)
            last = match.upperBound
        }
        out.append(contentsOf: scalars[last...])
        return String(out)
    }
}

extension RulesLibrary {
    /// The compiled pattern, once `input` is known to be within bounds.
    static func regex(_ pattern: String, on input: String, _ at: RulesPosition) throws(RulesError) -> RulesRegex {
        guard input.utf8.count <= RulesRegex.maxInputLength else {
            throw RulesError("The string is longer than \(RulesRegex.maxInputLength) bytes for a regular expression.", at: at)
        }
        return try RulesRegex(pattern, at: at)
    }
}
