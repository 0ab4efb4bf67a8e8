/// One request as the rules see it (docs/wire/security-rules.md: Methods, request and resource).
public struct FirestoreRulesRequest: Sendable {
    public var method: RulesMethod
    /// The target's full path: `databases/{d}/documents/…`.
    public var path: [String]
    /// `null`, or `{uid, token}`.
    public var auth: RulesValue
    public var time: RulesValue
    /// The stored resource (`{data, id, __name__}`), or `null`.
    public var resource: RulesValue
    /// A write's resource as it would be stored (`null` for a delete; absent for reads).
    public var requestResource: RulesValue?
    /// A list's `{limit, offset, orderBy}`.
    public var query: RulesValue?

    public init(method: RulesMethod, path: [String], auth: RulesValue = .null, time: RulesValue, resource: RulesValue = .null,
                requestResource: RulesValue? = nil, query: RulesValue? = nil) {
        self.method = method
        self.path = path
        self.auth = auth
        self.time = time
        self.resource = resource
        self.requestResource = requestResource
        self.query = query
    }

    public var value: RulesValue {
        var fields: [String: RulesValue] = ["auth": auth, "method": .string(method.rawValue), "path": .path(path), "time": time]
        if let requestResource { fields["resource"] = requestResource }
        if let query { fields["query"] = query }
        return .map(fields)
    }
}

/// What the rules decided, and why: each `allow` tried with its outcome, in source order.
public struct FirestoreRulesDecision: Sendable {
    public struct Outcome: Sendable, Equatable {
        public let line: Int
        /// `true`, `false`, or the evaluation error's text.
        public let result: String
        public let granted: Bool
        /// Wildcard bindings of the match the allow sits in.
        let boundValues: [String: RulesValue]

        /// The bindings as the trace shows them (made when asked: most decisions are never read).
        public var bindings: [String: String] { boundValues.mapValues(RulesLibrary.stringForm) }
    }

    public let allowed: Bool
    public let method: RulesMethod
    public let outcomes: [Outcome]
    public let accessCalls: Int
    public let debugOutput: [String]
    /// Each subexpression's value, when the decision was asked to keep them.
    public let visits: [RulesVisit]
    public let accesses: [RulesDocumentAccess]
    public let expressionsEvaluated: Int

    /// The Firestore emulator's denial message: `"\n"` and one `<detail> for '<method>' @ L<line>`
    /// per allow tried, or `No matching allow statements` (A13).
    public var message: String {
        guard !outcomes.isEmpty else { return "\nNo matching allow statements" }
        return "\n" + outcomes.map { "\($0.result) for '\(method.rawValue)' @ L\($0.line)" }.joined(separator: ", ")
    }
}

extension FirestoreRuleset {
    /// Decides `request`: every complete match of its path is tried (A2), the request is allowed
    /// when any `allow` for its method grants.
    public func decide(_ request: FirestoreRulesRequest, reader: (any RulesDocumentReader)?,
                       limits: RulesLimits = RulesLimits(), recordsVisits: Bool = false) -> FirestoreRulesDecision {
        let evaluator = RulesEvaluator(reader: reader, limits: limits)
        evaluator.recordsVisits = recordsVisits
        var outcomes: [FirestoreRulesDecision.Outcome] = []
        let base = RulesEvaluator.Scope(variables: ["request": request.value, "resource": request.resource])
        for (block, bindings) in completeMatches(of: request.path) {
            var scope = base
            scope.variables.merge(bindings) { _, new in new }
            scope.functions = block.functionScope
            for allow in block.allows where allow.methods.contains(request.method) {
                let result: String, granted: Bool
                if let condition = allow.condition {
                    switch evaluator.evaluate(condition, in: scope) {
                    case .success(.bool(let b)): (result, granted) = (String(b), b)
                    case .success(let other): (result, granted) = ("evaluation error at \(condition.position): not a bool but a \(other.typeName)", false)
                    case .failure(let error): (result, granted) = (FirestoreRuleset.detail(error), false)
                    }
                } else {
                    (result, granted) = ("true", true)
                }
                outcomes.append(.init(line: allow.position.line, result: result, granted: granted, boundValues: bindings))
            }
        }
        return FirestoreRulesDecision(allowed: outcomes.contains { $0.granted }, method: request.method, outcomes: outcomes,
                                      accessCalls: evaluator.accessCalls, debugOutput: evaluator.debugOutput,
                                      visits: evaluator.visits, accesses: evaluator.accesses, expressionsEvaluated: evaluator.expressionsEvaluated)
    }

    /// The emulator names the two common errors, and gives the position of the others.
    static func detail(_ error: RulesError) -> String {
        if error.message == "Null value error." || (error.message.hasPrefix("Property ") && error.message.hasSuffix("is undefined on object.")) {
            return error.message
        }
        return "evaluation error at L\(error.position.line):\(error.position.column)"
    }

    /// The blocks whose whole pattern chain matches `path`, with their bindings (each block
    /// carries the functions in its scope).
    func completeMatches(of path: [String]) -> [(MatchBlock, [String: RulesValue])] {
        var found: [(MatchBlock, [String: RulesValue])] = []
        func walk(_ block: MatchBlock, _ rest: ArraySlice<String>, _ bindings: [String: RulesValue]) {
            for child in block.matches {
                for (consumed, more) in matches(child.pattern[...], rest) {
                    let merged = more.isEmpty ? bindings : bindings.merging(more) { _, new in new }
                    if consumed == rest.count { found.append((child, merged)) }
                    // Nested matches continue from here (a `{x=**}` in v2 may match nothing).
                    walk(child, rest.dropFirst(consumed), merged)
                }
            }
        }
        walk(root, path[...], [:])
        return found
    }

    /// Every way `pattern` matches a prefix of `segments`: how many segments, and the bindings.
    func matches(_ pattern: ArraySlice<MatchSegment>, _ segments: ArraySlice<String>) -> [(Int, [String: RulesValue])] {
        if let fixed = fixedMatch(pattern, segments) { return fixed }
        guard let first = pattern.first else { return [(0, [:])] }
        let rest = pattern.dropFirst()
        switch first {
        case .literal(let text):
            guard segments.first == text else { return [] }
            return matches(rest, segments.dropFirst()).map { ($0.0 + 1, $0.1) }
        case .variable(let name):
            guard let segment = segments.first, segment != FirestoreRulesQuery.anyPath else { return [] }
            // A list's "any document" matches a wildcard but binds nothing a rule could read.
            let binding: [String: RulesValue] = segment == FirestoreRulesQuery.anyDocument ? [:] : [name: .string(segment)]
            return matches(rest, segments.dropFirst()).map { ($0.0 + 1, $0.1.merging(binding) { old, _ in old }) }
        case .recursive(let name):
            // v1: one or more segments, the rest of the path; v2: zero or more, anywhere.
            let counts = version >= 2 ? Array(0...segments.count) : (segments.isEmpty || !rest.isEmpty ? [] : [segments.count])
            return counts.flatMap { count in
                matches(rest, segments.dropFirst(count)).map { match in
                    (count + match.0, match.1.merging([name: .path(Array(segments.prefix(count)))]) { old, _ in old })
                }
            }
        }
    }

    /// A pattern without `**` matches at most one way: segment by segment, without recursion
    /// (the common case, on every request). Nil when the pattern has a recursive wildcard.
    private func fixedMatch(_ pattern: ArraySlice<MatchSegment>, _ segments: ArraySlice<String>) -> [(Int, [String: RulesValue])]? {
        var bindings: [String: RulesValue] = [:]
        var segment = segments.startIndex
        for part in pattern {
            switch part {
            case .recursive: return nil
            case .literal(let text):
                guard segment < segments.endIndex, segments[segment] == text else { return [] }
            case .variable(let name):
                guard segment < segments.endIndex, segments[segment] != FirestoreRulesQuery.anyPath else { return [] }
                // A list's "any document" matches a wildcard but binds nothing a rule could read.
                if segments[segment] != FirestoreRulesQuery.anyDocument { bindings[name] = .string(segments[segment]) }
            }
            segment += 1
        }
        return [(pattern.count, bindings)]
    }
}
