/// A query as the target watch serves (the SDK's queryToTarget): the full order spelled out,
/// and a limit-to-last query turned into the limit-to-first query of the reversed order, so a
/// query and its mirror share one target.
extension Query {
    public var target: Query {
        var target = self
        target.explicitOrderBy = orderBy
        guard limitToLast else { return target }
        target.explicitOrderBy = orderBy.map { Ordering(field: $0.field, descending: !$0.descending) }
        target.startAt = endAt.map { Bound(values: $0.values, before: !$0.before) }
        target.endAt = startAt.map { Bound(values: $0.values, before: !$0.before) }
        target.limitToLast = false
        return target
    }

    /// The target's identity: equal for a query and its mirror.
    public var targetCanonicalID: String { target.canonicalID }
}
