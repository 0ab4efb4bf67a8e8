/// One aggregation of a runAggregationQuery: count, sum or avg under an alias.
public struct Aggregation: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case count(upTo: Int64?)
        case sum(FieldPath)
        case avg(FieldPath)
    }

    public var alias: String
    public var kind: Kind

    public init(alias: String, kind: Kind) {
        self.alias = alias
        self.kind = kind
    }

    /// Parses `aggregations` (1 to 5); a missing alias becomes `field_<n>` (1-based).
    public static func parseList(_ json: JSON?) throws(FiregateError) -> [Aggregation] {
        guard let items = json?.arrayValue, !items.isEmpty else {
            throw .invalidArgument("Aggregations can not be empty.")
        }
        guard items.count <= 5 else { throw .invalidArgument("The query exceeds the maximum number of aggregations (5).") }
        var result: [Aggregation] = []
        var unaliased = 0
        for item in items {
            var alias = item.member("alias")?.stringValue ?? ""
            if alias.isEmpty {
                unaliased += 1
                alias = "field_\(unaliased)"
            }
            let kind: Kind
            if let count = item.member("count"), count != .null {
                var upTo: Int64?
                if let limit = count.member("upTo"), limit != .null {
                    guard let n = limit.integerLike, n > 0 else { throw .invalidArgument("count.upTo must be a positive integer.") }
                    upTo = n
                }
                kind = .count(upTo: upTo)
            } else if let sum = item.member("sum"), sum != .null {
                kind = .sum(try Query.parseFieldReference(sum.member("field")))
            } else if let avg = item.member("avg"), avg != .null {
                kind = .avg(try Query.parseFieldReference(avg.member("field")))
            } else {
                throw .invalidArgument("An aggregation must be one of count, sum or avg.")
            }
            guard !result.contains(where: { $0.alias == alias }) else {
                throw .invalidArgument("Aggregation aliases contain duplicate alias \(alias).")
            }
            result.append(Aggregation(alias: alias, kind: kind))
        }
        return result
    }

    /// The query an aggregation runs over. Each sum or average field is ordered by after the
    /// query's own order (production and the official emulator do; the index they need is the
    /// query's plus those fields), so only documents that have every such field (any value) are
    /// counted, summed or averaged — "a query with multiple aggregations only includes the
    /// documents that contain all the fields" — and a limited query keeps the documents lowest
    /// in them (the client suite's `sum`/`avg` with `limit` tests pin this down). After an
    /// order by the key no field can follow: INVALID_ARGUMENT, as there.
    public static func effectiveQuery(_ query: Query, for aggregations: [Aggregation]) throws(FiregateError) -> Query {
        // The query's whole order (inequality fields included) without the key it ends with.
        var base = query.orderBy
        if base.last?.field == .documentID, !query.explicitOrderBy.contains(where: { $0.field.isDocumentID }) { base.removeLast() }
        let ordered = Set(base.map(\.field))
        let missing = requiredFields(aggregations).filter { !ordered.contains($0) }
        guard !missing.isEmpty else { return query }
        // A filter on the key (any, equality included) puts the key in the index first too.
        let keyFiltered = query.filter?.leaves.contains { leaf in
            if case .field(let field, _, _) = leaf { return field.isDocumentID }
            return false
        } ?? false
        if ordered.contains(.documentID) || keyFiltered {
            throw .invalidArgument("This query requires an index that has fields [\(missing.map { "\($0)" }.joined(separator: ", "))] after __name__ "
                + "and Firestore does not currently support such an index. Please try the query again with additional ordering on those fields.")
        }
        var effective = query
        let descending = base.last?.descending ?? false
        effective.explicitOrderBy = base + missing.map { Query.Ordering(field: $0, descending: descending) }
        return effective
    }

    /// The sum and average fields, each once, in order.
    public static func requiredFields(_ aggregations: [Aggregation]) -> [FieldPath] {
        var fields: [FieldPath] = []
        for aggregation in aggregations {
            switch aggregation.kind {
            case .sum(let field), .avg(let field): if !fields.contains(field) { fields.append(field) }
            case .count: break
            }
        }
        return fields
    }

    /// The aggregate over the documents a query returned.
    public func compute(over documents: [Document], database: DatabaseID) -> Value {
        switch kind {
        case .count(let upTo):
            let n = Int64(documents.count)
            return .integer(upTo.map { min($0, n) } ?? n)
        case .sum(let field):
            var intSum: Int64 = 0
            var doubleSum = 0.0
            var isDouble = false
            for doc in documents {
                switch doc.value(at: field, database: database) {
                case .integer(let i)?:
                    if isDouble {
                        doubleSum += Double(i)
                    } else {
                        let (s, overflow) = intSum.addingReportingOverflow(i)
                        if overflow {
                            isDouble = true
                            doubleSum = Double(intSum) + Double(i)
                        } else {
                            intSum = s
                        }
                    }
                case .double(let d)?:
                    if !isDouble { isDouble = true; doubleSum = Double(intSum) }
                    doubleSum += d
                default: break
                }
            }
            return isDouble ? .double(doubleSum) : .integer(intSum)
        case .avg(let field):
            var total = 0.0
            var count = 0
            for doc in documents {
                switch doc.value(at: field, database: database) {
                case .integer(let i)?: total += Double(i); count += 1
                case .double(let d)?: total += d; count += 1
                default: break
                }
            }
            return count == 0 ? .null : .double(total / Double(count))
        }
    }
}
