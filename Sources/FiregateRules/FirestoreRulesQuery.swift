import FiregateModel

/// A query as `list` rules see it (docs/wire/security-rules.md, Queries: rules are not filters):
/// the rule is judged once per disjunct of the query's filters, against what the filters prove
/// about any document the query could return — an equality pins a field's value, a range bounds
/// it, `in` and `OR` split into disjuncts that must each pass — and a field the query does not
/// constrain is undefined, so a rule that reads it denies.
public struct FirestoreRulesQuery: Sendable {
    /// Per disjunct, what it proves of each field it constrains.
    public let disjuncts: [[FieldPath: RulesValue]]
    /// `request.query`: `limit`, `offset`, `orderBy`.
    public let value: RulesValue

    /// The last segment of a list's request path: any document of the collection (no id could
    /// equal it, so only wildcards match it).
    public static let anyDocument = "\u{0}*"
    /// Where a collection group's collections may sit: any path, so only recursive wildcards match it.
    public static let anyPath = "\u{0}**"

    /// Firestore caps a query at 30 disjuncts; past this the query is refused.
    static let maxDisjuncts = 30

    public init(_ query: Query) throws(RulesError) {
        let none = RulesPosition(line: 0, column: 0)
        var disjuncts: [[FieldPath: RulesValue]] = [[:]]
        if let filter = query.filter {
            disjuncts = try FirestoreRulesQuery.normalForm(filter)
        }
        guard disjuncts.count <= FirestoreRulesQuery.maxDisjuncts else {
            throw RulesError("The query has more than \(FirestoreRulesQuery.maxDisjuncts) disjunctions.", at: none)
        }
        self.disjuncts = disjuncts
        var fields: [String: RulesValue] = ["offset": .int(Int64(query.offset))]
        fields["limit"] = query.limit.map { .int(Int64($0)) } ?? .null
        fields["orderBy"] = query.explicitOrderBy.first.map { .string($0.field.segments.joined(separator: ".")) } ?? .null
        value = .map(fields)
    }

    /// The filter as an OR of ANDs, each AND as the constraint it puts on each field.
    private static func normalForm(_ filter: Query.Filter) throws(RulesError) -> [[FieldPath: RulesValue]] {
        switch filter {
        case .field(let field, .equal, let value): return [[field: RulesValue(value)]]
        case .field(let field, .in, .array(let values)): return values.map { [field: RulesValue($0)] }
        case .field(let field, let op, let value) where op == .lessThan || op == .lessThanOrEqual || op == .greaterThan || op == .greaterThanOrEqual:
            let bound = RulesValue(value)
            switch op {
            case .lessThan: return [[field: .bound(lower: nil, lowerInclusive: false, upper: bound, upperInclusive: false)]]
            case .lessThanOrEqual: return [[field: .bound(lower: nil, lowerInclusive: false, upper: bound, upperInclusive: true)]]
            case .greaterThan: return [[field: .bound(lower: bound, lowerInclusive: false, upper: nil, upperInclusive: false)]]
            default: return [[field: .bound(lower: bound, lowerInclusive: true, upper: nil, upperInclusive: false)]]
            }
        case .unary(let field, .isNull): return [[field: .null]]
        case .field, .unary: return [[:]]  // proves nothing a rule can read (!=, not-in, array-contains…)
        case .composite(.or, let filters):
            var result: [[FieldPath: RulesValue]] = []
            for inner in filters {
                result += try normalForm(inner)
                guard result.count <= maxDisjuncts else { return result }
            }
            return result
        case .composite(.and, let filters):
            var result: [[FieldPath: RulesValue]] = [[:]]
            for inner in filters {
                let options = try normalForm(inner)
                var combined: [[FieldPath: RulesValue]] = []
                for left in result {
                    for right in options { combined.append(left.merging(right) { a, b in intersect(a, b) }) }
                }
                result = combined
                guard result.count <= maxDisjuncts else { return result }
            }
            return result
        }
    }

    /// Two constraints on one field, combined: the tighter bounds (an equality wins).
    private static func intersect(_ a: RulesValue, _ b: RulesValue) -> RulesValue {
        guard case .bound(let l1, let li1, let u1, let ui1) = a, case .bound(let l2, let li2, let u2, let ui2) = b else {
            if case .bound = a { return b }
            return a
        }
        func tighter(_ x: RulesValue?, _ xi: Bool, _ y: RulesValue?, _ yi: Bool, lower: Bool) -> (RulesValue?, Bool) {
            guard let x else { return (y, yi) }
            guard let y else { return (x, xi) }
            guard let order = try? RulesOperators.compare(x, y, RulesPosition(line: 0, column: 0)) else { return (x, xi) }
            if order == 0 { return (x, xi && yi) }
            return (order > 0) == lower ? (x, xi) : (y, yi)
        }
        let (lower, lowerInclusive) = tighter(l1, li1, l2, li2, lower: true)
        let (upper, upperInclusive) = tighter(u1, ui1, u2, ui2, lower: false)
        return .bound(lower: lower, lowerInclusive: lowerInclusive, upper: upper, upperInclusive: upperInclusive)
    }

    /// The `resource` one disjunct stands for: its fields under `data`, nested by path.
    func resource(_ disjunct: [FieldPath: RulesValue]) -> RulesValue {
        var data: [String: RulesValue] = [:]
        func insert(_ segments: ArraySlice<String>, _ value: RulesValue, into map: inout [String: RulesValue]) {
            guard let first = segments.first else { return }
            if segments.count == 1 {
                map[first] = value
                return
            }
            var inner: [String: RulesValue] = [:]
            if case .map(let existing)? = map[first] { inner = existing }
            insert(segments.dropFirst(), value, into: &inner)
            map[first] = .map(inner)
        }
        for (field, value) in disjunct { insert(field.segments[...], value, into: &data) }
        return .map(["data": .map(data)])
    }
}

extension FirestoreRuleset {
    /// A `list` (a query, an aggregation, a query listen) of the collection at `request.path`:
    /// allowed only when the rules allow every disjunct of the query. The outcomes are those of the first disjunct denied, else of the last.
    public func decideList(_ request: FirestoreRulesRequest, query: FirestoreRulesQuery, reader: (any RulesDocumentReader)?,
                           limits: RulesLimits = RulesLimits(), recordsVisits: Bool = false) -> FirestoreRulesDecision {
        var last: FirestoreRulesDecision?
        for disjunct in query.disjuncts {
            var one = request
            one.method = .list
            if one.path.last != FirestoreRulesQuery.anyDocument { one.path.append(FirestoreRulesQuery.anyDocument) }
            one.resource = query.resource(disjunct)
            one.query = query.value
            let decision = decide(one, reader: reader, limits: limits, recordsVisits: recordsVisits)
            if !decision.allowed { return decision }
            last = decision
        }
        return last!
    }
}
