import FiregateModel
import FiregateRules

/// What security rules read of a database, kept beside what reads cache.
extension DocumentDatabase {
    /// The document as rules read it (`resource`: data, id, name), cached per version; nil when
    /// there is none.
    public func rulesResource(_ path: ResourcePath) -> RulesValue? {
        state.withLock { state in
            guard let entry = state.documents[path] else { return nil }
            if let resource = entry.rulesResource { return resource }
            let resource = RulesValue.resource(entry.document, database: id)
            state.documents[path]?.rulesResource = resource
            return resource
        }
    }
}
