/// A structured query as data: which documents (collection or collection group under a
/// parent), which filter, which order, which window. Evaluated identically by the backend
/// and by edge clients over their caches.
public struct Query: Sendable, Equatable {
    /// The parent document path; empty for the database root.
    public var parent: ResourcePath
    public var collectionID: String
    /// A collection-group query: every collection named `collectionID` under `parent`.
    public var allDescendants: Bool
    public var filter: Filter?
    /// The orderings as given; `orderBy` adds the implicit ones.
    public var explicitOrderBy: [Ordering]
    public var startAt: Bound?
    public var endAt: Bound?
    public var offset: Int
    public var limit: Int?
    /// The SDK's limitToLast: the last `limit` documents of the order, still returned in order.
    public var limitToLast: Bool
    /// `select.fields`; nil returns whole documents.
    public var projection: [FieldPath]?

    public init(parent: ResourcePath = ResourcePath([]), collectionID: String, allDescendants: Bool = false, filter: Filter? = nil,
                orderBy: [Ordering] = [], startAt: Bound? = nil, endAt: Bound? = nil, offset: Int = 0, limit: Int? = nil,
                limitToLast: Bool = false, projection: [FieldPath]? = nil) {
        self.parent = parent
        self.collectionID = collectionID
        self.allDescendants = allDescendants
        self.filter = filter
        self.explicitOrderBy = orderBy
        self.startAt = startAt
        self.endAt = endAt
        self.offset = offset
        self.limit = limit
        self.limitToLast = limitToLast
        self.projection = projection
    }

    /// A filter tree (field, unary and composite filters).
    public indirect enum Filter: Sendable, Equatable {
        case field(FieldPath, FieldOperator, Value)
        case unary(FieldPath, UnaryOperator)
        case composite(CompositeOperator, [Filter])
    }

    public enum FieldOperator: String, Sendable, CaseIterable {
        case lessThan = "LESS_THAN", lessThanOrEqual = "LESS_THAN_OR_EQUAL"
        case greaterThan = "GREATER_THAN", greaterThanOrEqual = "GREATER_THAN_OR_EQUAL"
        case equal = "EQUAL", notEqual = "NOT_EQUAL"
        case arrayContains = "ARRAY_CONTAINS", `in` = "IN", arrayContainsAny = "ARRAY_CONTAINS_ANY", notIn = "NOT_IN"

        /// Numbers of google.firestore.v1.StructuredQuery.FieldFilter.Operator.
        public var number: Int {
            switch self {
            case .lessThan: 1
            case .lessThanOrEqual: 2
            case .greaterThan: 3
            case .greaterThanOrEqual: 4
            case .equal: 5
            case .notEqual: 6
            case .arrayContains: 7
            case .in: 8
            case .arrayContainsAny: 9
            case .notIn: 10
            }
        }

        public var isInequality: Bool {
            switch self {
            case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .notEqual, .notIn: true
            default: false
            }
        }
    }

    public enum UnaryOperator: String, Sendable, CaseIterable {
        case isNaN = "IS_NAN", isNull = "IS_NULL", isNotNaN = "IS_NOT_NAN", isNotNull = "IS_NOT_NULL"

        public var number: Int {
            switch self {
            case .isNaN: 2
            case .isNull: 3
            case .isNotNaN: 4
            case .isNotNull: 5
            }
        }
    }

    public enum CompositeOperator: String, Sendable {
        case and = "AND", or = "OR"
    }

    public struct Ordering: Sendable, Equatable {
        public var field: FieldPath
        public var descending: Bool

        public init(field: FieldPath, descending: Bool = false) {
            self.field = field
            self.descending = descending
        }
    }

    /// A cursor: a prefix of the ordering's values; `before` means the position just before them.
    public struct Bound: Sendable, Equatable {
        public var values: [Value]
        public var before: Bool

        public init(values: [Value], before: Bool) {
            self.values = values
            self.before = before
        }
    }

    /// An identity of the query as a whole (every field), for caches keyed by query.
    public var canonicalID: String { "\(self)" }

    /// The collection path for a non-group query (`parent/collectionID`).
    public var collectionPath: ResourcePath { parent.appending(collectionID) }

    /// The full order: explicit orderings, then inequality fields not yet ordered (by field
    /// name), then `__name__` — the appended ones in the direction of the last explicit ordering
    /// (ascending without one), as StructuredQuery.order_by specifies.
    public var orderBy: [Ordering] {
        var result = explicitOrderBy
        var seen = Set(result.map(\.field))
        let descending = explicitOrderBy.last?.descending ?? false
        if let filter {
            for field in filter.inequalityFields.sorted() where !seen.contains(field) && !field.isDocumentID {
                result.append(Ordering(field: field, descending: descending))
                seen.insert(field)
            }
        }
        if !seen.contains(.documentID) {
            result.append(Ordering(field: .documentID, descending: descending))
        }
        return result
    }
}

extension Query.Filter {
    /// Fields constrained by an inequality (<, <=, >, >=, !=, not-in, is-not-null/nan). A range
    /// on null or NaN and `!= null`, which match nothing, are none: the emulator plans them
    /// away, so they neither order nor limit orders.
    public var inequalityFields: Set<FieldPath> {
        switch self {
        case .field(let field, let op, let value): op.isInequality && !Query.Filter.matchesNothing(op, value) ? [field] : []
        case .unary(let field, let op): (op == .isNotNaN || op == .isNotNull) ? [field] : []
        case .composite(_, let filters): filters.reduce(into: Set()) { $0.formUnion($1.inequalityFields) }
        }
    }

    /// Whether a range or `!=` filter matches no document on the backend whatever the data
    /// (a range on null or NaN, `!= null`).
    static func matchesNothing(_ op: Query.FieldOperator, _ operand: Value) -> Bool {
        switch op {
        case .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual: operand.isNullOrNaN
        case .notEqual: operand == .null
        default: false
        }
    }

    /// The largest number of array-contains(-any) filters in one conjunction of the filter's
    /// disjunctive normal form: an AND adds its parts' counts, an OR takes the largest.
    var mostArrayContainsPerConjunction: Int {
        switch self {
        case .field(_, let op, _): op == .arrayContains || op == .arrayContainsAny ? 1 : 0
        case .unary: 0
        case .composite(.and, let filters): filters.reduce(0) { $0 + $1.mostArrayContainsPerConjunction }
        case .composite(_, let filters): filters.map(\.mostArrayContainsPerConjunction).max() ?? 0
        }
    }

    /// Every field/unary filter in the tree, flattened.
    public var leaves: [Query.Filter] {
        switch self {
        case .composite(_, let filters): filters.flatMap(\.leaves)
        default: [self]
        }
    }

    public var containsOr: Bool {
        switch self {
        case .composite(.or, _): true
        case .composite(.and, let filters): filters.contains(where: \.containsOr)
        default: false
        }
    }
}
