/// A regular expression matched in time linear in the input (a Pike VM over a compiled
/// program, as RE2 does), so no pattern makes a rule hang: the rules languages use RE2 syntax,
/// and `(a+)+$` on a long input must cost what `a+` costs.
///
/// Syntax: literals and escapes (`\.` `\n` `\t` `\\`…), `.`, classes `[a-z_]` `[^…]`, the
/// shorthands `\d \w \s \D \W \S` (also in classes), anchors `^ $`, groups `( )` and `(?: )`,
/// alternation `|`, quantifiers `* + ? {n} {n,} {n,m}` (a lazy `?` suffix is accepted; matching
/// whole strings or all occurrences does not depend on it). Counted repeats are bounded (1 000)
/// and so is the program (`maxProgram`). Matching is on Unicode scalars.
struct LinearRegex {
    private enum Instruction {
        case scalar(Unicode.Scalar)
        case any
        case set([ClosedRange<UInt32>], negated: Bool)
        case split(Int, Int)
        case jump(Int)
        case lineStart
        case lineEnd
        case match
    }

    private indirect enum Node {
        case empty
        case scalar(Unicode.Scalar)
        case any
        case set([ClosedRange<UInt32>], negated: Bool)
        case start, end
        case concat([Node])
        case alternation([Node])
        case repeated(Node, min: Int, max: Int?)
    }

    static let maxProgram = 20_000
    static let maxRepeat = 1_000

    private let program: [Instruction]
    let caseInsensitive: Bool

    struct SyntaxError: Error {
        let message: String
    }

    init(_ pattern: String, caseInsensitive: Bool = false) throws(SyntaxError) {
        self.caseInsensitive = caseInsensitive
        var parser = Parser(scalars: Array((caseInsensitive ? pattern.lowercased() : pattern).unicodeScalars))
        let node = try parser.alternation()
        guard parser.index == parser.scalars.count else { throw SyntaxError(message: "unmatched ')'") }
        var program: [Instruction] = []
        try LinearRegex.emit(node, into: &program)
        program.append(.match)
        self.program = program
    }

    private static func emit(_ node: Node, into program: inout [Instruction]) throws(SyntaxError) {
        guard program.count < maxProgram else { throw SyntaxError(message: "the pattern is too large") }
        switch node {
        case .empty: break
        case .scalar(let s): program.append(.scalar(s))
        case .any: program.append(.any)
        case .set(let ranges, let negated): program.append(.set(ranges, negated: negated))
        case .start: program.append(.lineStart)
        case .end: program.append(.lineEnd)
        case .concat(let parts): for part in parts { try emit(part, into: &program) }
        case .alternation(let options):
            var jumps: [Int] = []
            for (i, option) in options.enumerated() {
                if i < options.count - 1 {
                    let split = program.count
                    program.append(.split(split + 1, -1))
                    try emit(option, into: &program)
                    jumps.append(program.count)
                    program.append(.jump(-1))
                    program[split] = .split(split + 1, program.count)
                } else {
                    try emit(option, into: &program)
                }
            }
            for jump in jumps { program[jump] = .jump(program.count) }
        case .repeated(let inner, let min, let max):
            for _ in 0..<min { try emit(inner, into: &program) }
            if let max {
                // Each optional copy may be skipped to the end.
                var splits: [Int] = []
                for _ in min..<max {
                    splits.append(program.count)
                    program.append(.split(program.count + 1, -1))
                    try emit(inner, into: &program)
                }
                for split in splits { program[split] = .split(split + 1, program.count) }
            } else {
                let loop = program.count
                program.append(.split(loop + 1, -1))
                try emit(inner, into: &program)
                program.append(.jump(loop))
                program[loop] = .split(loop + 1, program.count)
            }
        }
    }

    // MARK: Matching

    /// The leftmost-longest match starting at `from` or later, in one pass (threads carry where
    /// they started; of two threads at one instruction the earlier start wins).
    private func search(_ input: [Unicode.Scalar], from: Int, anchored: Bool) -> Range<Int>? {
        typealias Thread = (pc: Int, start: Int)
        var current: [Thread] = [], next: [Thread] = []
        var claimed = [Int](repeating: -1, count: program.count)
        var best: Range<Int>?
        func add(_ pc: Int, _ start: Int, _ position: Int, _ list: inout [Thread]) {
            guard claimed[pc] != position else { return }
            claimed[pc] = position
            switch program[pc] {
            case .split(let a, let b):
                add(a, start, position, &list)
                add(b, start, position, &list)
            case .jump(let target): add(target, start, position, &list)
            case .lineStart: if position == 0 { add(pc + 1, start, position, &list) }
            case .lineEnd: if position == input.count { add(pc + 1, start, position, &list) }
            default: list.append((pc, start))
            }
        }
        var position = from
        while true {
            if best == nil, !anchored || position == from { add(0, position, position, &current) }
            for thread in current {
                guard case .match = program[thread.pc] else { continue }
                if best == nil || thread.start < best!.lowerBound || (thread.start == best!.lowerBound && position > best!.upperBound) {
                    best = thread.start..<position
                }
            }
            if let found = best { current.removeAll { $0.start > found.lowerBound } }
            guard position < input.count, !current.isEmpty || (best == nil && !anchored) else { break }
            let scalar = caseInsensitive ? LinearRegex.folded(input[position]) : input[position]
            next.removeAll(keepingCapacity: true)
            for thread in current {
                let accepts: Bool
                switch program[thread.pc] {
                case .scalar(let s): accepts = s == scalar
                case .any: accepts = scalar != "\n"
                case .set(let ranges, let negated): accepts = ranges.contains { $0.contains(scalar.value) } != negated
                default: accepts = false
                }
                if accepts { add(thread.pc + 1, thread.start, position + 1, &next) }
            }
            swap(&current, &next)
            position += 1
        }
        return best
    }

    static func folded(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        scalar.properties.lowercaseMapping.unicodeScalars.count == 1 ? scalar.properties.lowercaseMapping.unicodeScalars.first! : scalar
    }

    func wholeMatch(_ text: String) -> Bool {
        let input = Array(text.unicodeScalars)
        return search(input, from: 0, anchored: true)?.upperBound == input.count
    }

    /// Whether any part of `text` matches.
    func firstMatch(in text: String) -> Bool {
        search(Array(text.unicodeScalars), from: 0, anchored: false) != nil
    }

    /// Non-overlapping matches, leftmost first (an empty match advances by one).
    func ranges(in text: String) -> [Range<Int>] {
        let input = Array(text.unicodeScalars)
        var found: [Range<Int>] = [], start = 0
        while start <= input.count, let match = search(input, from: start, anchored: false) {
            found.append(match)
            start = match.upperBound > match.lowerBound ? match.upperBound : match.upperBound + 1
        }
        return found
    }

    // MARK: Parsing

    private struct Parser {
        let scalars: [Unicode.Scalar]
        var index = 0
        var depth = 0

        private func peek() -> Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

        mutating func alternation() throws(SyntaxError) -> Node {
            depth += 1
            defer { depth -= 1 }
            guard depth <= 100 else { throw SyntaxError(message: "the pattern nests too deeply") }
            var options = [try concatenation()]
            while peek() == "|" {
                index += 1
                options.append(try concatenation())
            }
            return options.count == 1 ? options[0] : .alternation(options)
        }

        private mutating func concatenation() throws(SyntaxError) -> Node {
            var parts: [Node] = []
            while let c = peek(), c != "|", c != ")" { parts.append(try repetition()) }
            return parts.isEmpty ? .empty : (parts.count == 1 ? parts[0] : .concat(parts))
        }

        private mutating func repetition() throws(SyntaxError) -> Node {
            var node = try atom()
            while let c = peek() {
                var bounds: (Int, Int?)
                switch c {
                case "*": bounds = (0, nil)
                case "+": bounds = (1, nil)
                case "?": bounds = (0, 1)
                case "{":
                    guard let counted = try counted() else { return node }
                    bounds = counted
                    node = .repeated(node, min: bounds.0, max: bounds.1)
                    if peek() == "?" { index += 1 }
                    continue
                default: return node
                }
                index += 1
                if peek() == "?" { index += 1 }  // lazy: the same strings match
                node = .repeated(node, min: bounds.0, max: bounds.1)
            }
            return node
        }

        /// `{n}`, `{n,}`, `{n,m}`; nil (a literal `{`) when it is not one.
        private mutating func counted() throws(SyntaxError) -> (Int, Int?)? {
            let start = index
            index += 1
            func number() -> Int? {
                var digits = ""
                while let c = index < scalars.count ? scalars[index] : nil, ("0"..."9").contains(c) {
                    digits.unicodeScalars.append(c)
                    index += 1
                }
                return Int(digits)
            }
            guard let min = number() else { index = start; return nil }
            var max: Int? = min
            if peek() == "," {
                index += 1
                max = number()
            }
            guard peek() == "}" else { index = start; return nil }
            index += 1
            guard min <= LinearRegex.maxRepeat, (max ?? min) <= LinearRegex.maxRepeat, min <= (max ?? min) else {
                throw SyntaxError(message: "bad repetition count")
            }
            return (min, max)
        }

        private mutating func atom() throws(SyntaxError) -> Node {
            let c = scalars[index]
            index += 1
            switch c {
            case ".": return .any
            case "^": return .start
            case "$": return .end
            case "(":
                if peek() == "?" {
                    guard index + 1 < scalars.count, scalars[index + 1] == ":" else { throw SyntaxError(message: "unsupported group (RE2 has no lookaround)") }
                    index += 2
                }
                let inner = try alternation()
                guard peek() == ")" else { throw SyntaxError(message: "missing ')'") }
                index += 1
                return inner
            case "[": return try characterClass()
            case "*", "+", "?": throw SyntaxError(message: "missing argument to repetition operator")
            case "\\":
                guard let escaped = peek() else { throw SyntaxError(message: "trailing backslash") }
                index += 1
                if let shorthand = Parser.shorthand(escaped) { return .set(shorthand.ranges, negated: shorthand.negated) }
                if ("1"..."9").contains(escaped) { throw SyntaxError(message: "backreferences are not supported (RE2)") }
                return .scalar(Parser.escape(escaped))
            default: return .scalar(c)
            }
        }

        static func escape(_ c: Unicode.Scalar) -> Unicode.Scalar {
            switch c {
            case "n": "\n"
            case "t": "\t"
            case "r": "\r"
            case "f": "\u{0C}"
            case "v": "\u{0B}"
            default: c
            }
        }

        static func shorthand(_ c: Unicode.Scalar) -> (ranges: [ClosedRange<UInt32>], negated: Bool)? {
            let digits: [ClosedRange<UInt32>] = [48...57]
            let word: [ClosedRange<UInt32>] = [48...57, 65...90, 95...95, 97...122]
            let space: [ClosedRange<UInt32>] = [9...13, 32...32]
            switch c {
            case "d": return (digits, false)
            case "D": return (digits, true)
            case "w": return (word, false)
            case "W": return (word, true)
            case "s": return (space, false)
            case "S": return (space, true)
            default: return nil
            }
        }

        private mutating func characterClass() throws(SyntaxError) -> Node {
            var negated = false
            if peek() == "^" {
                negated = true
                index += 1
            }
            var ranges: [ClosedRange<UInt32>] = []
            var first = true
            while true {
                guard let c = peek() else { throw SyntaxError(message: "missing ']'") }
                if c == "]" && !first { index += 1; break }
                first = false
                index += 1
                var low = c
                if c == "\\" {
                    guard let escaped = peek() else { throw SyntaxError(message: "trailing backslash") }
                    index += 1
                    if let shorthand = Parser.shorthand(escaped) {
                        guard !shorthand.negated else { throw SyntaxError(message: "negated shorthand inside a class") }
                        ranges += shorthand.ranges
                        continue
                    }
                    low = Parser.escape(escaped)
                }
                if peek() == "-", index + 1 < scalars.count, scalars[index + 1] != "]" {
                    index += 1
                    var high = scalars[index]
                    index += 1
                    if high == "\\", let escaped = peek() {
                        index += 1
                        high = Parser.escape(escaped)
                    }
                    guard low.value <= high.value else { throw SyntaxError(message: "bad character class range") }
                    ranges.append(low.value...high.value)
                } else {
                    ranges.append(low.value...low.value)
                }
            }
            return .set(ranges, negated: negated)
        }
    }
}
