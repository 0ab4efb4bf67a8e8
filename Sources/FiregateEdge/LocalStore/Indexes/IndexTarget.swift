import FiregateModel

/// How an index serves one query: the equality prefixes to read (one per combination of
/// equality values), the array elements (for a CONTAINS segment), the bounds on the segment
/// after the prefix, and whether index order is the query's order with every filter served
/// (so a limited query can stop reading early).
struct IndexMatch: Sendable {
    struct Bounds: Sendable {
        var lower: (Value, Bool)?
        var upper: (Value, Bool)?
    }

    var prefixes: [[Value]]
    /// `[nil]` without a CONTAINS segment.
    var elements: [Value?]
    var range: Bounds?
    var ordered: Bool
}

/// A query seen as the SDK's TargetIndexMatcher sees it: its equality filters, at most one
/// inequality field, its array filter and its order.
struct IndexTarget {
    let query: Query
    var equalities: [FieldPath: [Value]] = [:]
    var arrayFilter: (field: FieldPath, elements: [Value])?
    var inequalityField: FieldPath?
    var bounds = IndexMatch.Bounds()
    /// Filters that do not narrow a range (`!=`, `not-in`, is-not-null/NaN): served by re-checking.
    var unboundedInequality = false

    /// Most combinations of `in` values read as separate ranges.
    static let maxPrefixes = 1000

    /// Nil for a query no index can serve: an OR, several inequality fields, several array filters.
    init?(_ query: Query) {
        self.query = query
        guard let filter = query.filter else { return }
        if filter.containsOr { return nil }
        for leaf in filter.leaves {
            switch leaf {
            case .field(let field, let op, let value):
                switch op {
                case .equal: guard addEquality(field, [value]) else { return nil }
                case .in: guard addEquality(field, value.arrayElements ?? []) else { return nil }
                case .arrayContains, .arrayContainsAny:
                    guard arrayFilter == nil else { return nil }
                    arrayFilter = (field, op == .arrayContains ? [value] : (value.arrayElements ?? []))
                case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual, .notIn:
                    guard inequalityField == nil || inequalityField == field else { return nil }
                    inequalityField = field
                    tighten(op, value)
                }
            case .unary(let field, let op):
                switch op {
                case .isNull: guard addEquality(field, [.null]) else { return nil }
                case .isNaN: guard addEquality(field, [.double(.nan)]) else { return nil }
                case .isNotNull, .isNotNaN:
                    guard inequalityField == nil || inequalityField == field else { return nil }
                    inequalityField = field
                    unboundedInequality = true
                }
            case .composite:
                return nil
            }
        }
    }

    private mutating func addEquality(_ field: FieldPath, _ values: [Value]) -> Bool {
        if equalities[field] != nil { return false }  // two equalities on one field: leave it to a scan
        equalities[field] = values
        return true
    }

    private mutating func tighten(_ op: Query.FieldOperator, _ value: Value) {
        switch op {
        case .greaterThan, .greaterThanOrEqual:
            let inclusive = op == .greaterThanOrEqual
            if let (current, _) = bounds.lower, Value.compare(current, value) >= 0 { return }
            bounds.lower = (value, inclusive)
        case .lessThan, .lessThanOrEqual:
            let inclusive = op == .lessThanOrEqual
            if let (current, _) = bounds.upper, Value.compare(current, value) <= 0 { return }
            bounds.upper = (value, inclusive)
        default:
            unboundedInequality = true
        }
    }

    /// Whether `index` serves the query, and how (TargetIndexMatcher.servedByIndex).
    func match(_ index: FieldIndex) -> IndexMatch? {
        if let arraySegment = index.arraySegment, arraySegment.field != arrayFilter?.field { return nil }
        let segments = index.directionalSegments
        let orderBy = query.orderBy
        var position = 0
        // Leading segments: equality filters, in any order.
        var usedEqualities = Set<FieldPath>()
        while position < segments.count, equalities[segments[position].field] != nil, !usedEqualities.contains(segments[position].field) {
            usedEqualities.insert(segments[position].field)
            position += 1
        }
        let prefixFields = segments[..<position].map(\.field)
        var orderPosition = 0
        var range: IndexMatch.Bounds?
        // Then the inequality field, which must also be the first ordering.
        if let inequalityField, !usedEqualities.contains(inequalityField), position < segments.count {
            let segment = segments[position]
            guard segment.field == inequalityField, let first = orderBy.first, IndexTarget.matches(first, segment) else { return nil }
            range = bounds
            position += 1
            orderPosition = 1
        }
        // The rest follow the ordering, in order and direction (a suffix may stay unindexed).
        for segment in segments[position...] {
            guard orderPosition < orderBy.count, IndexTarget.matches(orderBy[orderPosition], segment) else { return nil }
            orderPosition += 1
        }
        var prefixes: [[Value]] = [[]]
        for field in prefixFields {
            let values = equalities[field]!
            prefixes = prefixes.flatMap { prefix in values.map { prefix + [$0] } }
            if prefixes.count > IndexTarget.maxPrefixes { return nil }
        }
        let elements: [Value?] = index.arraySegment == nil ? [nil] : (arrayFilter?.elements ?? []).map { Optional($0) }
        return IndexMatch(prefixes: prefixes, elements: elements, range: range,
                          ordered: servesEverything(index, prefixFields: prefixFields, rangeUsed: range != nil))
    }

    /// The index auto creation builds for the query (buildTargetIndex): its equality and array
    /// filters first (array ones CONTAINS, others ascending), then its orderings not yet used.
    func autoIndex() -> FieldIndex {
        var segments: [FieldIndex.Segment] = []
        var used = Set<FieldPath>()
        for leaf in query.filter?.leaves ?? [] {
            let (field, kind): (FieldPath, FieldIndex.Kind)
            switch leaf {
            case .field(let f, .arrayContains, _), .field(let f, .arrayContainsAny, _): (field, kind) = (f, .contains)
            case .field(let f, .equal, _), .field(let f, .in, _), .unary(let f, .isNull), .unary(let f, .isNaN): (field, kind) = (f, .ascending)
            default: continue
            }
            guard !field.isDocumentID, used.insert(field).inserted else { continue }
            segments.append(.init(field: field, kind: kind))
        }
        for ordering in query.orderBy where !ordering.field.isDocumentID && used.insert(ordering.field).inserted {
            segments.append(.init(field: ordering.field, kind: ordering.descending ? .descending : .ascending))
        }
        return FieldIndex(collectionGroup: query.collectionID, segments: segments)
    }

    static func matches(_ ordering: Query.Ordering, _ segment: FieldIndex.Segment) -> Bool {
        ordering.field == segment.field && ordering.descending == (segment.kind == .descending)
    }

    /// Every filter is narrowed by the index and, within each range, index order is the
    /// query's order: then the first results of each range are the query's first results.
    private func servesEverything(_ index: FieldIndex, prefixFields: [FieldPath], rangeUsed: Bool) -> Bool {
        guard Set(prefixFields) == Set(equalities.keys), !unboundedInequality else { return false }
        if arrayFilter != nil && index.arraySegment == nil { return false }
        if inequalityField != nil && !rangeUsed && !equalities.keys.contains(inequalityField!) { return false }
        // Orderings that vary within a range: not on an equality field.
        let varying = query.orderBy.filter { !equalities.keys.contains($0.field) }
        let trailing = index.directionalSegments.filter { !prefixFields.contains($0.field) }
        guard let last = varying.last, last.field.isDocumentID, varying.count == trailing.count + 1 else { return false }
        for (ordering, segment) in zip(varying, trailing) where !IndexTarget.matches(ordering, segment) { return false }
        let nameDescending = index.directionalSegments.last?.kind == .descending
        return last.descending == nameDescending
    }
}
