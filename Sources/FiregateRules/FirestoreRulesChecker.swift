/// What the emulator reports when a ruleset loads (docs/wire/security-rules.md, Loading rules): the parse,
/// then a check of names — every variable and function used is declared where it is used,
/// calls have the right number of arguments, functions do not recurse (A4, A14), `let` only in
/// version 2. Errors keep a ruleset from loading; warnings do not.
public enum FirestoreRulesLoader {
    /// The ruleset (nil when an ERROR was found) and every issue, in source order.
    public static func load(_ source: String) -> (ruleset: FirestoreRuleset?, issues: [RulesIssue]) {
        guard source.utf8.count <= 256 * 1024 else {
            return (nil, [RulesIssue("The ruleset is over 256 KiB.", at: RulesPosition(line: 1, column: 1))])
        }
        do {
            let (ruleset, warnings) = try FirestoreRulesParser.parse(source)
            var checker = FirestoreRulesChecker(version: ruleset.version)
            checker.check(ruleset.root, scope: FirestoreRulesChecker.globals, functions: [:])
            let issues = (warnings + checker.issues).sorted { ($0.position.line, $0.position.column) < ($1.position.line, $1.position.column) }
            return (issues.contains { $0.severity == .error } ? nil : ruleset, issues)
        } catch {
            return (nil, [error])
        }
    }
}

struct FirestoreRulesChecker {
    let version: Int
    var issues: [RulesIssue] = []

    /// Names every expression may use.
    static let globals: Set<String> = ["request", "resource", "math", "duration", "timestamp", "latlng", "hashing"]
    static let builtins: [String: ClosedRange<Int>] = [
        "get": 1...1, "getAfter": 1...1, "exists": 1...1, "existsAfter": 1...1, "debug": 1...1,
        "string": 1...1, "int": 1...1, "float": 1...1, "bool": 1...1, "bytes": 1...1, "path": 1...1,
    ]

    init(version: Int) {
        self.version = version
    }

    mutating func check(_ block: MatchBlock, scope: Set<String>, functions: [String: RulesFunction]) {
        var scope = scope
        for segment in block.pattern {
            switch segment {
            case .variable(let name), .recursive(let name): scope.insert(name)
            case .literal: break
            }
        }
        var visible = functions
        var declaredHere = Set<String>()
        for function in block.functions {
            if !declaredHere.insert(function.name).inserted {
                issues.append(RulesIssue("Function \(function.name) is declared twice in one scope.", at: function.position))
            }
            visible[function.name] = function
        }
        for function in block.functions {
            if version < 2, let first = function.bindings.first {
                issues.append(RulesIssue("'let' needs rules_version = '2'.", at: first.value.position))
            }
            var inner = scope.union(function.parameters)
            for binding in function.bindings {
                check(binding.value, scope: inner, functions: visible)
                inner.insert(binding.name)
            }
            check(function.body, scope: inner, functions: visible)
            if let cycle = recursion(from: function, functions: visible) {
                issues.append(RulesIssue("Function \(function.name) calls itself (\(cycle.joined(separator: " → "))); recursion is not allowed.",
                                         at: function.position))
            }
        }
        for allow in block.allows {
            if let condition = allow.condition { check(condition, scope: scope, functions: visible) }
        }
        for child in block.matches { check(child, scope: scope, functions: visible) }
    }

    mutating func check(_ expression: RulesExpression, scope: Set<String>, functions: [String: RulesFunction]) {
        switch expression {
        case .literal: break
        case .identifier(let name, let at):
            if !scope.contains(name) { issues.append(RulesIssue("Unknown variable '\(name)'.", at: at)) }
        case .list(let items, _): for item in items { check(item, scope: scope, functions: functions) }
        case .map(let entries, _):
            for entry in entries {
                check(entry.key, scope: scope, functions: functions)
                check(entry.value, scope: scope, functions: functions)
            }
        case .path(let parts, _):
            for case .interpolated(let inner) in parts { check(inner, scope: scope, functions: functions) }
        case .member(let base, _, _): check(base, scope: scope, functions: functions)
        case .index(let base, let index, _):
            check(base, scope: scope, functions: functions)
            check(index, scope: scope, functions: functions)
        case .slice(let base, let start, let end, _):
            for part in [base, start, end].compactMap({ $0 }) { check(part, scope: scope, functions: functions) }
        case .call(let callee, let arguments, let at):
            for argument in arguments { check(argument, scope: scope, functions: functions) }
            switch callee {
            case .identifier(let name, _):
                if let function = functions[name] {
                    if function.parameters.count != arguments.count {
                        issues.append(RulesIssue("Function \(name) takes \(function.parameters.count) arguments, not \(arguments.count).", at: at))
                    }
                } else if let arity = FirestoreRulesChecker.builtins[name] {
                    if !arity.contains(arguments.count) { issues.append(RulesIssue("\(name)() takes \(arity.lowerBound) argument(s).", at: at)) }
                } else {
                    issues.append(RulesIssue("Function not found: \(name).", at: at))
                }
            default: check(callee, scope: scope, functions: functions)
            }
        case .unary(_, let operand, _): check(operand, scope: scope, functions: functions)
        case .binary(_, let left, let right, _):
            check(left, scope: scope, functions: functions)
            check(right, scope: scope, functions: functions)
        case .conditional(let condition, let yes, let no, _):
            for part in [condition, yes, no] { check(part, scope: scope, functions: functions) }
        case .isType(let operand, let type, let at):
            check(operand, scope: scope, functions: functions)
            let types: Set<String> = ["bool", "int", "float", "number", "string", "bytes", "path", "list", "map", "set", "map_diff",
                                      "timestamp", "duration", "latlng", "null", "constraint"]
            if !types.contains(type) { issues.append(RulesIssue("Unknown type '\(type)'.", at: at)) }
        }
    }

    /// A call path from `function` back to itself, if there is one.
    private func recursion(from function: RulesFunction, functions: [String: RulesFunction]) -> [String]? {
        var visited = Set<String>()
        func search(_ current: RulesFunction, _ trail: [String]) -> [String]? {
            for name in calls(in: [current.body] + current.bindings.map(\.value)) {
                if name == function.name { return trail + [name] }
                guard let next = functions[name], visited.insert(name).inserted else { continue }
                if let found = search(next, trail + [name]) { return found }
            }
            return nil
        }
        return search(function, [function.name])
    }

    private func calls(in expressions: [RulesExpression]) -> [String] {
        var names: [String] = []
        func visit(_ e: RulesExpression) {
            switch e {
            case .call(.identifier(let name, _), let arguments, _):
                names.append(name)
                arguments.forEach(visit)
            case .call(let callee, let arguments, _):
                visit(callee)
                arguments.forEach(visit)
            case .list(let items, _): items.forEach(visit)
            case .map(let entries, _): entries.forEach { visit($0.key); visit($0.value) }
            case .path(let parts, _): for case .interpolated(let inner) in parts { visit(inner) }
            case .member(let base, _, _), .unary(_, let base, _), .isType(let base, _, _): visit(base)
            case .index(let a, let b, _), .binary(_, let a, let b, _): visit(a); visit(b)
            case .slice(let base, let start, let end, _): [base, start, end].compactMap { $0 }.forEach(visit)
            case .conditional(let a, let b, let c, _): [a, b, c].forEach(visit)
            case .literal, .identifier: break
            }
        }
        expressions.forEach(visit)
        return names
    }
}
