import FiregateModel
import Synchronization

/// What the expressions of a Firestore ruleset evaluated to, counted across every decision
/// since it was loaded (docs/wire/security-rules.md, Coverage), and reported in the Firebase Rules
/// API's shape: an `ExpressionReport` per allow condition and function, `children` following
/// the expression's structure, `values` with their counts.
public final class RulesCoverage: Sendable {
    /// Distinct values kept per expression; further ones are counted under `.others`.
    static let valuesPerExpression = 16

    /// What one evaluation of an expression gave.
    enum Outcome: Hashable {
        case value(RulesValue)
        /// A collection (map, list, set, bytes, diff), counted by its type: hashing every map a
        /// request builds would cost more than judging it.
        case kind(String)
        case error(String)
        case others
    }

    /// The outcomes counted at one expression (a source position).
    struct Expression {
        let column: Int
        var outcomes: [Outcome] = []
        var counts: [Int] = []
    }

    /// Expressions by line, then found by column: recording a visit compares a few values and
    /// hashes nothing (hashing each visited value cost more than judging the request).
    private let lines = Mutex<[[Expression]]>([])

    public init() {}

    /// Counts each visited subexpression's value (the report renders them).
    public func record(_ visits: [RulesVisit]) {
        guard !visits.isEmpty else { return }
        lines.withLock { lines in
            for visit in visits {
                let outcome: Outcome
                switch visit.result {
                case .success(let value):
                    switch value {
                    case .map, .list, .set, .bytes, .mapDiff, .bound: outcome = .kind(value.typeName)
                    default: outcome = .value(value)
                    }
                case .failure(let error): outcome = .error(error.message)
                }
                let line = visit.position.line, column = visit.position.column
                if line >= lines.count { lines.append(contentsOf: repeatElement([], count: line - lines.count + 1)) }
                guard let slot = lines[line].firstIndex(where: { $0.column == column }) else {
                    lines[line].append(Expression(column: column, outcomes: [outcome], counts: [1]))
                    continue
                }
                if let seen = lines[line][slot].outcomes.firstIndex(of: outcome) {
                    lines[line][slot].counts[seen] += 1
                } else if lines[line][slot].outcomes.count < RulesCoverage.valuesPerExpression {
                    lines[line][slot].outcomes.append(outcome)
                    lines[line][slot].counts.append(1)
                } else if let others = lines[line][slot].outcomes.firstIndex(of: .others) {
                    lines[line][slot].counts[others] += 1
                } else {
                    lines[line][slot].outcomes.append(.others)
                    lines[line][slot].counts.append(1)
                }
            }
        }
    }

    /// The counted values of an expression: `{"value": ExpressionValue, "count": n}`, sorted.
    static func rendered(_ values: [Outcome: Int]) -> [(value: JSON, count: Int)] {
        values.map { outcome, count -> (JSON, Int) in
            switch outcome {
            case .value(let value): (value.expressionValue, count)
            case .kind(let type): (["type": .string(type)], count)
            case .error(let message): (["error": .string(message)], count)
            case .others: (["other": true], count)
            }
        }.sorted { JSONWriter.string($0.0) < JSONWriter.string($1.0) }
    }

    /// `{"rules":{"files":[…]},"report":[ExpressionReport…]}`.
    public func report(_ ruleset: FirestoreRuleset, fileName: String) -> JSON {
        let counts = byPosition
        var reports: [JSON] = []
        func walk(_ block: MatchBlock) {
            for function in block.functions {
                for binding in function.bindings { reports.append(expressionReport(binding.value, counts, fileName)) }
                reports.append(expressionReport(function.body, counts, fileName))
            }
            for allow in block.allows {
                if let condition = allow.condition { reports.append(expressionReport(condition, counts, fileName)) }
            }
            for child in block.matches { walk(child) }
        }
        walk(ruleset.root)
        return ["rules": ["files": [["name": .string(fileName), "content": .string(ruleset.source)]]], "report": .array(reports)]
    }

    /// The counted values of the expression at each position, for the HTML report.
    public var valuesByPosition: [RulesPosition: [(value: JSON, count: Int)]] {
        byPosition.mapValues(RulesCoverage.rendered)
    }

    private var byPosition: [RulesPosition: [Outcome: Int]] {
        var grouped: [RulesPosition: [Outcome: Int]] = [:]
        for (line, expressions) in lines.withLock({ $0 }).enumerated() {
            for expression in expressions {
                grouped[RulesPosition(line: line, column: expression.column)] =
                    Dictionary(zip(expression.outcomes, expression.counts), uniquingKeysWith: +)
            }
        }
        return grouped
    }

    private func expressionReport(_ expression: RulesExpression, _ counts: [RulesPosition: [Outcome: Int]], _ fileName: String) -> JSON {
        let position = expression.position
        let values = RulesCoverage.rendered(counts[position] ?? [:]).map { ["value": $0.value, "count": .int(Int64($0.count))] as JSON }
        return [
            "sourcePosition": ["fileName": .string(fileName), "line": .int(Int64(position.line)), "column": .int(Int64(position.column))],
            "values": .array(values),
            "children": .array(expression.children.map { expressionReport($0, counts, fileName) }),
        ]
    }
}

extension RulesExpression {
    /// The expressions directly inside this one.
    public var children: [RulesExpression] {
        switch self {
        case .literal, .identifier: []
        case .list(let items, _): items
        case .map(let entries, _): entries.flatMap { [$0.key, $0.value] }
        case .path(let parts, _): parts.compactMap { if case .interpolated(let inner) = $0 { inner } else { nil } }
        case .member(let base, _, _): [base]
        case .index(let base, let index, _): [base, index]
        case .slice(let base, let start, let end, _): [base] + [start, end].compactMap { $0 }
        case .call(let callee, let arguments, _): [callee] + arguments
        case .unary(_, let operand, _): [operand]
        case .binary(_, let left, let right, _): [left, right]
        case .conditional(let condition, let yes, let no, _): [condition, yes, no]
        case .isType(let operand, _, _): [operand]
        }
    }
}

/// How often each Realtime Database rule (`.read`, `.write`, `.validate` at a rules location,
/// wildcards as written) gave each result since the rules were loaded.
public final class RealtimeRulesCoverage: Sendable {
    private let counts = Mutex<[String: [String: Int]]>([:])

    public init() {}

    public func record(_ decision: RealtimeRulesDecision, ruleset: RealtimeRuleset) {
        counts.withLock { counts in
            for outcome in decision.outcomes {
                let location = ruleset.template(of: outcome.location.split(separator: "/").map(String.init))
                counts[outcome.kind + " " + location, default: [:]][outcome.result, default: 0] += 1
            }
        }
    }

    /// `{"rules": <source>, "report": [{kind, location, results: {result: count}}]}`.
    public func report(_ ruleset: RealtimeRuleset) -> JSON {
        let counts = counts.withLock { $0 }
        let rows: [JSON] = counts.keys.sorted().map { key in
            let space = key.firstIndex(of: " ")!
            let results = counts[key]!.keys.sorted().reduce(JSON.object([:])) { $0.withMember($1, .int(Int64(counts[key]![$1]!))) }
            return ["kind": .string(String(key[..<space])), "location": .string(String(key[key.index(after: space)...])), "results": results]
        }
        return ["rules": .string(ruleset.source), "report": .array(rows)]
    }
}

extension RealtimeRuleset {
    /// A concrete location as the rules name it: `/status/alice` → `/status/$uid`.
    public func template(of path: [String]) -> String {
        var node: Node? = root
        var segments: [String] = []
        for key in path {
            guard let current = node, let (next, binding) = current.child(key) else {
                segments.append(key)
                node = nil
                continue
            }
            segments.append(binding.map { $0.0 } ?? key)  // the wildcard, named with its `$`
            node = next
        }
        return "/" + segments.joined(separator: "/")
    }
}
