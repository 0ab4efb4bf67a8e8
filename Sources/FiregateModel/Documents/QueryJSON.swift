/// Parsing and validation of `structuredQuery` JSON (google.firestore.v1.StructuredQuery).
/// Enums are accepted by name or by number, fields in camelCase or snake_case.
extension Query {
    public init(structuredQuery json: JSON, parent: ResourcePath, database: DatabaseID) throws(FiregateError) {
        guard case .object = json else { throw .invalidArgument("structuredQuery must be an object.") }
        guard let from = json.member("from")?.arrayValue, from.count == 1, let selector = from.first else {
            throw .invalidArgument("A structured query must select exactly one collection (\"from\" needs one entry).")
        }
        let allDescendants = selector.member("allDescendants")?.boolValue ?? false
        // No collection id: a kindless query over every descendant (what recursive deletes run).
        let collectionID = selector.member("collectionId")?.stringValue ?? ""
        guard !collectionID.isEmpty || allDescendants else {
            throw .invalidArgument("The collection selector needs a collectionId.")
        }
        guard !collectionID.contains("/") else { throw .invalidArgument("Invalid collectionId \"\(collectionID)\".") }
        var query = Query(parent: parent, collectionID: collectionID, allDescendants: allDescendants)
        if let whereJSON = json.member("where"), whereJSON != .null {
            query.filter = try Query.parseFilter(whereJSON, database: database)
        }
        if let orders = json.member("orderBy"), orders != .null {
            guard let list = orders.arrayValue else { throw .invalidArgument("orderBy must be a list.") }
            query.explicitOrderBy = try list.map { item throws(FiregateError) in
                let field = try Query.parseFieldReference(item.member("field"))
                let direction = item.member("direction")
                let descending: Bool
                switch direction {
                case nil, .null?, .string("ASCENDING")?, .int(1)?, .string("DIRECTION_UNSPECIFIED")?, .int(0)?: descending = false
                case .string("DESCENDING")?, .int(2)?: descending = true
                default: throw .invalidArgument("Invalid orderBy direction.")
                }
                return Ordering(field: field, descending: descending)
            }
        }
        if let start = json.member("startAt"), start != .null { query.startAt = try Query.parseCursor(start) }
        if let end = json.member("endAt"), end != .null { query.endAt = try Query.parseCursor(end) }
        if let offset = json.member("offset"), offset != .null {
            guard let n = offset.integerLike, n >= 0, n <= Int32.max else { throw .invalidArgument("offset must be a non-negative integer.") }
            query.offset = Int(n)
        }
        if let limit = json.member("limit"), limit != .null {
            guard let n = limit.integerLike, n >= 0, n <= Int32.max else { throw .invalidArgument("limit must be a non-negative integer.") }
            query.limit = Int(n)
        }
        if let select = json.member("select"), select != .null {
            let fields = select.member("fields")?.arrayValue ?? []
            query.projection = try fields.map { item throws(FiregateError) in try Query.parseFieldReference(item) }
        }
        try query.validate(database: database)
        self = query
    }

    static func parseFieldReference(_ json: JSON?) throws(FiregateError) -> FieldPath {
        guard let path = json?.member("fieldPath")?.stringValue else {
            throw .invalidArgument("A field reference needs a fieldPath.")
        }
        return try FieldPath.parse(path)
    }

    static func parseCursor(_ json: JSON) throws(FiregateError) -> Bound {
        let values = try (json.member("values")?.arrayValue ?? []).map { item throws(FiregateError) in try Value(json: item) }
        return Bound(values: values, before: json.member("before")?.boolValue ?? false)
    }

    static func parseFilter(_ json: JSON, database: DatabaseID) throws(FiregateError) -> Filter {
        if let composite = json.member("compositeFilter") {
            let op: CompositeOperator
            switch composite.member("op") {
            case .string("AND")?, .int(1)?: op = .and
            case .string("OR")?, .int(2)?: op = .or
            default: throw .invalidArgument("Invalid composite filter operator.")
            }
            guard let list = composite.member("filters")?.arrayValue, !list.isEmpty else {
                throw .invalidArgument("A composite filter needs at least one filter.")
            }
            return .composite(op, try list.map { item throws(FiregateError) in try parseFilter(item, database: database) })
        }
        if let fieldFilter = json.member("fieldFilter") {
            let field = try parseFieldReference(fieldFilter.member("field"))
            guard let op = parseEnum(fieldFilter.member("op"), FieldOperator.allCases, number: \.number) else {
                throw .invalidArgument("Invalid field filter operator.")
            }
            guard let valueJSON = fieldFilter.member("value") else { throw .invalidArgument("A field filter needs a value.") }
            return .field(field, op, try Value(json: valueJSON))
        }
        if let unary = json.member("unaryFilter") {
            let field = try parseFieldReference(unary.member("field"))
            guard let op = parseEnum(unary.member("op"), UnaryOperator.allCases, number: \.number) else {
                throw .invalidArgument("Invalid unary filter operator.")
            }
            return .unary(field, op)
        }
        throw .invalidArgument("A filter must be a compositeFilter, fieldFilter or unaryFilter.")
    }

    static func parseEnum<E: RawRepresentable>(_ json: JSON?, _ cases: [E], number: (E) -> Int) -> E? where E.RawValue == String {
        switch json {
        case .string(let name)?: return E(rawValue: name) ?? cases.first { String(number($0)) == name }
        case .int(let n)?: return cases.first { number($0) == Int(n) }
        default: return nil
        }
    }

    /// Production's structural rules for queries.
    func validate(database: DatabaseID) throws(FiregateError) {
        if let filter {
            let leaves = filter.leaves
            var notFilters = 0
            var disjunctive = 0
            for leaf in leaves {
                switch leaf {
                case .field(let field, let op, let value):
                    switch op {
                    case .in, .arrayContainsAny, .notIn:
                        guard let values = value.arrayElements, !values.isEmpty else {
                            throw .invalidArgument("A '\(op.rawValue)' filter needs a non-empty array value.")
                        }
                        if op == .notIn, values.count > 10 {
                            throw .invalidArgument("A 'NOT_IN' filter supports at most 10 elements in the value array.")
                        }
                        if op != .notIn, values.count > 30 {
                            throw .invalidArgument("'\(op.rawValue)' filters support a maximum of 30 elements in the value array.")
                        }
                        if op == .notIn { notFilters += 1 } else { disjunctive += 1 }
                    case .notEqual: notFilters += 1
                    default: break
                    }
                    if field.isDocumentID { try Query.validateKeyOperand(value, op: op, database: database) }
                case .unary(let field, let op):
                    if op == .isNotNaN || op == .isNotNull { notFilters += 1 }
                    if field.isDocumentID { throw .invalidArgument("Unary filters cannot be applied to __name__.") }
                default: break
                }
            }
            if notFilters > 1 {
                throw .invalidArgument("Only a single 'NOT_EQUAL', 'NOT_IN', 'IS_NOT_NAN', or 'IS_NOT_NULL' filter allowed per query.")
            }
            // Inequalities on fields order by those fields before the key: a key equality, or
            // an explicit order by the key, would have to come first (production, the emulator).
            let inequalities = filter.inequalityFields
            if inequalities.contains(where: { !$0.isDocumentID }), !inequalities.contains(.documentID),
               leaves.contains(where: { if case .field(let field, let op, _) = $0 { field.isDocumentID && (op == .equal || op == .in) } else { false } }) {
                throw .invalidArgument("Equality on key is not allowed if there are other inequality fields and key does not appear in inequalities.")
            }
            // One array-contains or array-contains-any per conjunction of the filter's
            // disjunctive normal form (counted without expanding it).
            if filter.mostArrayContainsPerConjunction > 1 {
                throw .invalidArgument("A maximum of 1 'ARRAY_CONTAINS' filter is allowed per disjunction.")
            }
            if leaves.contains(where: { if case .field(_, .notIn, _) = $0 { true } else { false } }), disjunctive > 0 || filter.containsOr {
                throw .invalidArgument("NOT_IN cannot be combined with IN, ARRAY_CONTAINS_ANY or OR filters.")
            }
        }
        let orders = orderBy
        if let key = orders.firstIndex(where: \.field.isDocumentID), key != orders.count - 1 {
            throw .invalidArgument("order by clause cannot contain more fields after the key")
        }
        for bound in [startAt, endAt].compactMap({ $0 }) {
            if bound.values.count > orders.count {
                throw .invalidArgument("Too many cursor values: the cursor has \(bound.values.count) values but the query orders by \(orders.count) fields.")
            }
            for (value, ordering) in zip(bound.values, orders) where ordering.field.isDocumentID {
                guard case .reference(let name) = value else {
                    throw .invalidArgument("A cursor value for __name__ must be a referenceValue.")
                }
                let path = try database.path(fromName: name)
                if !allDescendants, path.parent != collectionPath {
                    throw .invalidArgument("The cursor reference \"\(name)\" is not in the queried collection.")
                }
            }
        }
    }

    static func validateKeyOperand(_ value: Value, op: FieldOperator, database: DatabaseID) throws(FiregateError) {
        let values = (op == .in || op == .notIn) ? (value.arrayElements ?? []) : [value]
        if op == .arrayContains || op == .arrayContainsAny {
            throw .invalidArgument("'\(op.rawValue)' filters cannot be applied to __name__.")
        }
        for item in values {
            guard case .reference(let name) = item else {
                throw .invalidArgument("__key__ filter value must be a Key")
            }
            _ = try database.path(fromName: name)
        }
    }
}
