/// A parsed Firestore ruleset: `rules_version`, one `service cloud.firestore` and its matches,
/// functions and allows, each with its source position.
/// A class: every decision kept refers to the ruleset it was made with, by one reference.
public final class FirestoreRuleset: Sendable {
    /// 1 or 2 (`rules_version = '2'`); decides what `{x=**}` matches.
    public let version: Int
    public let root: MatchBlock
    public let source: String

    init(version: Int, root: MatchBlock, source: String) {
        self.version = version
        self.root = root.scoped(within: [:])
        self.source = source
    }
}

/// A `match` block (the service body is the root, with no pattern).
public struct MatchBlock: Sendable {
    public let pattern: [MatchSegment]
    public let allows: [AllowStatement]
    public let functions: [RulesFunction]
    public let matches: [MatchBlock]
    public let position: RulesPosition
    /// The functions its rules can call (its own and its ancestors', inner ones shadowing outer
    /// ones), by name: made once when the ruleset is built, not per request.
    var functionScope: [String: RulesFunction] = [:]

    /// This block and its matches with their function scopes, inside a block whose scope is `outer`.
    func scoped(within outer: [String: RulesFunction]) -> MatchBlock {
        var scope = outer
        for function in functions { scope[function.name] = function }
        var block = MatchBlock(pattern: pattern, allows: allows, functions: functions,
                               matches: matches.map { $0.scoped(within: scope) }, position: position)
        block.functionScope = scope
        return block
    }
}

/// The methods of a request, and the groups `allow` may name.
public enum RulesMethod: String, Sendable, CaseIterable {
    case get, list, create, update, delete

    /// What `allow <name>` covers: `read` = get + list, `write` = create + update + delete.
    static func named(_ name: String) -> [RulesMethod]? {
        switch name {
        case "read": [.get, .list]
        case "write": [.create, .update, .delete]
        default: RulesMethod(rawValue: name).map { [$0] }
        }
    }
}

/// `allow get, list: if <condition>;` (no condition: always).
public struct AllowStatement: Sendable {
    public let methods: Set<RulesMethod>
    public let condition: RulesExpression?
    public let position: RulesPosition
}

/// `function name(params) { let x = …; return … }`.
public struct RulesFunction: Sendable {
    public let name: String
    public let parameters: [String]
    public let bindings: [(name: String, value: RulesExpression)]
    public let body: RulesExpression
    public let position: RulesPosition
}

/// An expression with where it starts.
public indirect enum RulesExpression: Sendable {
    case literal(RulesValue, RulesPosition)
    case identifier(String, RulesPosition)
    case list([RulesExpression], RulesPosition)
    case map([(key: RulesExpression, value: RulesExpression)], RulesPosition)
    /// A raw path: text segments and `$(…)` interpolations.
    case path([PathPart], RulesPosition)
    case member(RulesExpression, String, RulesPosition)
    case index(RulesExpression, RulesExpression, RulesPosition)
    case slice(RulesExpression, RulesExpression?, RulesExpression?, RulesPosition)
    case call(RulesExpression, [RulesExpression], RulesPosition)
    case unary(String, RulesExpression, RulesPosition)
    case binary(String, RulesExpression, RulesExpression, RulesPosition)
    case conditional(RulesExpression, RulesExpression, RulesExpression, RulesPosition)
    case isType(RulesExpression, String, RulesPosition)

    public enum PathPart: Sendable {
        case text(String)
        case interpolated(RulesExpression)
    }

    public var position: RulesPosition {
        switch self {
        case .literal(_, let p), .identifier(_, let p), .list(_, let p), .map(_, let p), .path(_, let p), .member(_, _, let p),
             .index(_, _, let p), .slice(_, _, _, let p), .call(_, _, let p), .unary(_, _, let p), .binary(_, _, _, let p),
             .conditional(_, _, _, let p), .isType(_, _, let p):
            p
        }
    }
}
