import Foundation

/// A rules regular expression (`matches`, `split`, `replace`). The rules language uses RE2
/// syntax; what RE2 refuses (backreferences, lookaround) is refused here too, and patterns and
/// inputs are bounded.
///
/// Known gap: matching runs on Foundation's backtracking engine, so a pattern with nested
/// quantifiers can take long on a hostile input; an RE2-style linear-time matcher is to come.
struct RulesRegex {
    static let maxPatternLength = 1_000
    static let maxInputLength = 1 << 20

    let expression: NSRegularExpression

    init(_ pattern: String, at: RulesPosition) throws(RulesError) {
        guard pattern.count <= RulesRegex.maxPatternLength else {
            throw RulesError("The regular expression is longer than \(RulesRegex.maxPatternLength) characters.", at: at)
        }
        for unsupported in ["(?=", "(?!", "(?<=", "(?<!"] where pattern.contains(unsupported) {
            throw RulesError("Invalid regular expression: lookaround is not supported (RE2).", at: at)
        }
        if pattern.range(of: #"\\[1-9]"#, options: .regularExpression) != nil {
            throw RulesError("Invalid regular expression: backreferences are not supported (RE2).", at: at)
        }
        do { expression = try NSRegularExpression(pattern: pattern) } catch {
            throw RulesError("Invalid regular expression '\(pattern)'.", at: at)
        }
    }

    func wholeMatch(_ text: String) -> Bool {
        let range = NSRange(text.startIndex..., in: text)
        guard let match = expression.firstMatch(in: text, options: [.anchored], range: range) else { return false }
        return match.range == range
    }

    func split(_ text: String) -> [String] {
        var parts: [String] = [], last = text.startIndex
        for match in expression.matches(in: text, range: NSRange(text.startIndex..., in: text)) where match.range.length > 0 {
            guard let range = Range(match.range, in: text) else { continue }
            parts.append(String(text[last..<range.lowerBound]))
            last = range.upperBound
        }
        parts.append(String(text[last...]))
        return parts
    }

    func replace(_ text: String, with replacement: String) -> String {
        expression.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text),
                                            withTemplate: NSRegularExpression.escapedTemplate(for: replacement))
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
