import FiregateModel

/// Who asks, when, and what the tree looks like, for one Realtime Database decision.
public struct RealtimeRulesContext {
    public let data: any RealtimeRulesData
    /// `null`, or `{uid, provider, token}`.
    let auth: RealtimeRulesValue
    let now: Double
    let query: RealtimeRulesValue

    /// `claims`: the token's payload (nil when unauthenticated); `uid` is `sub` or `user_id`.
    public init(data: any RealtimeRulesData, claims: JSON?, nowMillis: Double, query: [String: JSON] = [:]) {
        self.data = data
        self.now = nowMillis
        if let claims, case .object(let fields) = claims {
            let token = RealtimeRulesValue(claims)
            var auth: [String: RealtimeRulesValue] = ["token": token]
            auth["uid"] = (fields["sub"] ?? fields["user_id"]).map(RealtimeRulesValue.init) ?? .null
            if case .object(let firebase)? = fields["firebase"], let provider = firebase["sign_in_provider"] { auth["provider"] = RealtimeRulesValue(provider) }
            self.auth = .object(auth)
        } else {
            auth = .null
        }
        // A plain read counts as ordered by key (B5).
        var object: [String: RealtimeRulesValue] = ["orderByKey": .bool(true), "orderByValue": .bool(false), "orderByPriority": .bool(false),
                                                   "orderByChild": .null, "startAt": .null, "endAt": .null, "equalTo": .null,
                                                   "limitToFirst": .null, "limitToLast": .null]
        for (key, value) in query { object[key] = RealtimeRulesValue(value) }
        if query["orderByChild"] != nil || query["orderByValue"] == .bool(true) || query["orderByPriority"] == .bool(true) {
            object["orderByKey"] = query["orderByKey"].map(RealtimeRulesValue.init) ?? .bool(false)
        }
        self.query = .object(object)
    }
}

/// A Realtime Database decision: every rule tried, where, and what it gave.
public struct RealtimeRulesDecision: Sendable {
    public struct Outcome: Sendable, Equatable {
        public let kind: String
        /// The rule's location, `/` for the root.
        public let location: String
        public let source: String
        /// `true`, `false`, or the error.
        public let result: String
    }

    public let allowed: Bool
    public let outcomes: [Outcome]
}

extension RealtimeRuleset {
    /// A read at `path` is allowed when some `.read` from the root down to it grants (B2).
    public func read(_ path: [String], _ context: RealtimeRulesContext) -> RealtimeRulesDecision {
        var outcomes: [RealtimeRulesDecision.Outcome] = []
        let granted = walk(path) { node, location, variables in
            node.read.map { check($0, ".read", location, variables, context, &outcomes) } ?? false
        }
        return RealtimeRulesDecision(allowed: granted, outcomes: outcomes)
    }

    /// A write at `path` is allowed when some `.write` from the root down to it grants and every
    /// `.validate` on the way and in the written subtree holds where the new data is not null (B2, B7).
    public func write(_ path: [String], _ context: RealtimeRulesContext) -> RealtimeRulesDecision {
        var outcomes: [RealtimeRulesDecision.Outcome] = []
        let granted = walk(path) { node, location, variables in
            node.write.map { check($0, ".write", location, variables, context, &outcomes) } ?? false
        }
        guard granted else { return RealtimeRulesDecision(allowed: false, outcomes: outcomes) }
        var valid = true
        // Along the path (ancestors' `.validate` see their new data), then the written subtree.
        var node: Node? = root, variables: [String: String] = [:]
        for depth in 0...path.count {
            guard let current = node else { break }
            let location = Array(path.prefix(depth))
            if depth < path.count, let validate = current.validate, context.data.holdsValue(at: location, after: true) {
                valid = check(validate, ".validate", location, variables, context, &outcomes) && valid
            }
            if depth == path.count {
                valid = validateSubtree(current, location, variables, context, &outcomes) && valid
            } else {
                let next = current.child(path[depth])
                node = next?.0
                if let (name, key) = next?.binding { variables[name] = key }
            }
        }
        return RealtimeRulesDecision(allowed: valid, outcomes: outcomes)
    }

    private func validateSubtree(_ node: Node, _ location: [String], _ variables: [String: String], _ context: RealtimeRulesContext,
                                 _ outcomes: inout [RealtimeRulesDecision.Outcome]) -> Bool {
        guard let value = context.data.value(at: location, after: true), value != .null else { return true }
        var valid = true
        if let validate = node.validate { valid = check(validate, ".validate", location, variables, context, &outcomes) }
        if case .object(let fields) = value {
            for key in fields.keys where !key.hasPrefix(".") {
                guard let (child, binding) = node.child(key) else { continue }
                var inner = variables
                if let (name, bound) = binding { inner[name] = bound }
                valid = validateSubtree(child, location + [key], inner, context, &outcomes) && valid
            }
        }
        return valid
    }

    /// Walks the rule nodes from the root to `path`, stopping at the first `visit` that grants.
    private func walk(_ path: [String], _ visit: (Node, [String], [String: String]) -> Bool) -> Bool {
        var node: Node? = root, variables: [String: String] = [:]
        for depth in 0...path.count {
            guard let current = node else { return false }
            if visit(current, Array(path.prefix(depth)), variables) { return true }
            guard depth < path.count, let next = current.child(path[depth]) else { return false }
            node = next.0
            if let (name, key) = next.binding { variables[name] = key }
        }
        return false
    }

    private func check(_ rule: Rule, _ kind: String, _ location: [String], _ variables: [String: String], _ context: RealtimeRulesContext,
                       _ outcomes: inout [RealtimeRulesDecision.Outcome]) -> Bool {
        let place = "/" + location.joined(separator: "/")
        switch rule {
        case .constant(let b):
            outcomes.append(.init(kind: kind, location: place, source: String(b), result: String(b)))
            return b
        case .expression(let expression, let source):
            let evaluator = RealtimeRulesEvaluator(data: context.data, location: location, variables: variables, auth: context.auth,
                                                   now: context.now, query: context.query)
            let result: String, granted: Bool
            do {
                switch try evaluator.evaluate(expression) {
                case .bool(let b): (result, granted) = (String(b), b)
                default: (result, granted) = ("error: the rule did not give a boolean", false)
                }
            } catch {
                (result, granted) = ("error: \(error.message)", false)
            }
            outcomes.append(.init(kind: kind, location: place, source: source, result: result))
            return granted
        }
    }
}
