/// Query evaluation over in-memory documents, following the SDKs' matching rules
/// (JS SDK core/filter.ts, core/query.ts): range filters match only values of the same type
/// class, `!=`/`not-in` skip missing and null fields, ordering requires the ordered fields.
extension Query {
    /// Whether the document belongs to the queried collection (or group).
    public func containsPath(_ path: ResourcePath) -> Bool {
        guard path.isDocument else { return false }
        // Compares segments in place: this runs per candidate document, so no parent path is built.
        let segments = path.segments
        guard collectionID.isEmpty || segments[segments.count - 2] == collectionID else { return false }
        if allDescendants {
            return segments.count - 1 > parent.count && segments.starts(with: parent.segments)
        }
        return segments.count == parent.count + 2 && segments.starts(with: parent.segments)
    }

    /// Membership, filter and ordered-field presence (not the cursors or the window). Implicitly
    /// ordered inequality fields count too: `a > 1 || b == 1` orders by `a`, so `{b: 1}` is out
    /// (JS SDK queryMatchesOrderBy).
    ///
    /// `locally`: the SDK's own matcher (a view over its cache), where a null or NaN operand
    /// equals null or NaN; otherwise the backend's, where it matches nothing (docs/documents.md,
    /// "Null and NaN in filters").
    public func matches(_ document: Document, database: DatabaseID, locally: Bool = false) -> Bool {
        guard containsPath(document.path) else { return false }
        for ordering in orderBy where !ordering.field.isDocumentID {
            if document.value(at: ordering.field, database: database) == nil { return false }
        }
        guard let filter else { return true }
        return filter.matches(document, database: database, locally: locally)
    }

    /// Compares two matching documents by the full order.
    public func compare(_ a: Document, _ b: Document, database: DatabaseID) -> Int {
        for ordering in orderBy {
            let c: Int
            if ordering.field.isDocumentID {
                c = ResourcePath.compare(a.path, b.path)
            } else {
                c = Value.compare(a.value(at: ordering.field, database: database) ?? .null, b.value(at: ordering.field, database: database) ?? .null)
            }
            if c != 0 { return ordering.descending ? -c : c }
        }
        return 0
    }

    /// Whether a document lies within startAt/endAt.
    public func withinBounds(_ document: Document, database: DatabaseID) -> Bool {
        let orders = orderBy
        if let startAt {
            let c = compare(document, to: startAt, orders: orders, database: database)
            if startAt.before ? c < 0 : c <= 0 { return false }
        }
        if let endAt {
            let c = compare(document, to: endAt, orders: orders, database: database)
            if endAt.before ? c >= 0 : c > 0 { return false }
        }
        return true
    }

    /// The document's position against a cursor: negative before it, zero at it, positive after.
    func compare(_ document: Document, to bound: Bound, orders: [Ordering], database: DatabaseID) -> Int {
        for (value, ordering) in zip(bound.values, orders) {
            var c: Int
            if ordering.field.isDocumentID {
                guard case .reference(let name) = value, let path = try? database.path(fromName: name) else { return 0 }
                c = ResourcePath.compare(document.path, path)
            } else {
                c = Value.compare(document.value(at: ordering.field, database: database) ?? .null, value)
            }
            if ordering.descending { c = -c }
            if c != 0 { return c }
        }
        return 0
    }

    /// Every candidate that matches (filter and cursors), sorted by the query's order — the
    /// result before offset and limit.
    public func matchingSorted(_ candidates: some Sequence<Document>, database: DatabaseID, locally: Bool = false) -> [Document] {
        var result = candidates.filter { matches($0, database: database, locally: locally) && withinBounds($0, database: database) }
        result.sort { compare($0, $1, database: database) < 0 }
        return result
    }

    /// Applies offset and limit (or limitToLast) to a sorted match list.
    public func window(_ sorted: [Document]) -> (documents: [Document], skipped: Int) {
        if limitToLast {
            guard let limit, sorted.count > limit else { return (sorted, 0) }
            return (Array(sorted.suffix(limit)), 0)
        }
        let skipped = min(offset, sorted.count)
        var end = sorted.count
        if let limit { end = min(end, skipped + limit) }
        return (Array(sorted[skipped..<end]), skipped)
    }

    /// Runs the whole query over candidate documents: filter, order, cursors, offset, limit.
    public func run(over candidates: some Sequence<Document>, database: DatabaseID, locally: Bool = false) -> (documents: [Document], skipped: Int) {
        window(matchingSorted(candidates, database: database, locally: locally))
    }
}

extension Query.Filter {
    public func matches(_ document: Document, database: DatabaseID, locally: Bool = false) -> Bool {
        switch self {
        case .composite(.and, let filters): return filters.allSatisfy { $0.matches(document, database: database, locally: locally) }
        case .composite(.or, let filters): return filters.contains { $0.matches(document, database: database, locally: locally) }
        case .unary(let field, let op):
            let value = document.value(at: field, database: database)
            switch op {
            case .isNaN: return value?.isNaN ?? false
            case .isNull: return value == .null
            case .isNotNaN: return value != nil && value != .null && !(value!.isNaN)
            case .isNotNull: return value != nil && value != .null
            }
        case .field(let field, let op, let operand):
            guard let value = document.value(at: field, database: database) else { return false }
            return locally ? Query.Filter.compare(value, op, operand) : Query.Filter.compareOnBackend(value, op, operand)
        }
    }

    /// The backend's matching: a null or NaN operand — the value of `==`, `!=`, a range or
    /// `array-contains`, an element of `in` or `array-contains-any` — matches nothing (the SDK
    /// sends `== null` and `== NaN` as unary filters; raw requests that do not, and `in [null]`,
    /// get nothing, as from production and the official emulator); `not-in` with null matches
    /// nothing. Everything else as the SDK's matcher.
    static func compareOnBackend(_ value: Value, _ op: Query.FieldOperator, _ operand: Value) -> Bool {
        switch op {
        case .equal, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual, .arrayContains:
            guard !operand.isNullOrNaN else { return false }
            return compare(value, op, operand)
        case .notEqual:
            if operand == .null { return false }
            return operand.isNaN ? value != .null : compare(value, op, operand)
        case .in, .arrayContainsAny:
            guard let elements = operand.arrayElements else { return false }
            return compare(value, op, .array(elements.filter { !$0.isNullOrNaN }))
        case .notIn:
            guard let elements = operand.arrayElements else { return false }
            return compare(value, op, .array(elements.filter { !$0.isNaN }))
        }
    }

    /// The SDK's matcher (core/filter.ts): values compare as they order, null equals null.
    static func compare(_ value: Value, _ op: Query.FieldOperator, _ operand: Value) -> Bool {
        switch op {
        case .notEqual:
            return value != .null && !Value.equals(value, operand)
        case .arrayContains:
            return value.arrayElements?.contains { Value.equals($0, operand) } ?? false
        case .in:
            return operand.arrayElements?.contains { Value.equals($0, value) } ?? false
        case .arrayContainsAny:
            guard let elements = value.arrayElements, let candidates = operand.arrayElements else { return false }
            return elements.contains { element in candidates.contains { Value.equals($0, element) } }
        case .notIn:
            guard let excluded = operand.arrayElements, !excluded.contains(.null) else { return false }
            return value != .null && !excluded.contains { Value.equals($0, value) }
        case .equal, .lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual:
            // Only values of the same type class compare (an int range never matches strings).
            guard value.typeOrder == operand.typeOrder else { return false }
            if op != .equal, value.isNaN || operand.isNaN { return false }
            let c = Value.compare(value, operand)
            switch op {
            case .equal: return c == 0
            case .lessThan: return c < 0
            case .lessThanOrEqual: return c <= 0
            case .greaterThan: return c > 0
            default: return c >= 0
            }
        }
    }
}
