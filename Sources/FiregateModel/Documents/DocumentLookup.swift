/// A single-document listen is a query for one name (`__name__ == ref`): the SDK's document
/// target. Listens and limbo resolutions build it; watch recognizes it by its shape.
extension Query {
    public static func lookup(_ path: ResourcePath, database: DatabaseID) -> Query {
        Query(parent: path.parent.parent, collectionID: path.parent.lastSegment,
              filter: .field(.documentID, .equal, .reference(database.resourceName(path))))
    }

    /// The document a lookup query names, or nil for any other query.
    public func lookedUpPath(database: DatabaseID) -> ResourcePath? {
        guard !allDescendants, explicitOrderBy.isEmpty, startAt == nil, endAt == nil, limit == nil, offset == 0,
              case .field(.documentID, .equal, .reference(let name))? = filter,
              let path = try? database.path(fromName: name), path.isDocument, path.parent == collectionPath else { return nil }
        return path
    }
}

extension Document {
    /// A Firestore REST `Document` (`name`, `fields`, `createTime`, `updateTime`) of `database`;
    /// `at` names the member in error messages.
    public init(json: JSON, database: DatabaseID, at: String) throws(FiregateError) {
        guard let name = json["name"]?.stringValue, let path = try? database.path(fromName: name), path.isDocument else {
            throw .invalidArgument("\(at) needs a name: a document of \(database.documentsRoot).")
        }
        guard let created = json["createTime"]?.stringValue.flatMap({ Timestamp(rfc3339: $0) }),
              let updated = json["updateTime"]?.stringValue.flatMap({ Timestamp(rfc3339: $0) }) else {
            throw .invalidArgument("\(at) needs createTime and updateTime (RFC 3339).")
        }
        do {
            let fields = try Value.parseFields(json["fields"] ?? [:])
            try DocumentLimits.validate(path: path, fields: fields, database: database)
            self.init(path: path, fields: fields, createTime: created, updateTime: updated)
        } catch {
            throw .invalidArgument("\(at): \(error.message)")
        }
    }
}
