import FiregateModel

/// Local query indexes (setIndexConfiguration, the persistent cache index manager): the calls
/// that configure `LocalIndexes`, and the query engine's use of it. As in the SDK, only a
/// persistent cache uses indexes; a memory cache accepts a configuration and ignores it.
extension EdgeClient {
    /// The SDK's relativeIndexReadCostPerDocument: auto creation builds an index once a full
    /// scan read more than this many documents per result.
    var indexReadCost: Double {
        switch settings.platform {
        case .apple: 3.4
        case .android: 2.0
        case .web: 4.0
        }
    }

    /// Auto creation considers only scans of at least this many documents.
    static let indexAutoCreationMinimumDocuments = 100

    var usesIndexes: Bool { settings.persistence == .persistent }

    /// Runs a query over the cache, creating an index afterwards when auto creation is on and
    /// the scan was costly enough (QueryEngine.createCacheIndexes).
    func runLocally(_ query: Query) -> QueryExecution {
        let execution = localView().execute(query, useIndexes: usesIndexes)
        if local.indexAutoCreation, usesIndexes, execution.plan == .scan,
           execution.documentsRead >= EdgeClient.indexAutoCreationMinimumDocuments,
           Double(execution.documentsRead) > indexReadCost * Double(execution.documents.count),
           let target = IndexTarget(query) {
            let index = target.autoIndex()
            if !index.segments.isEmpty, !local.remoteDocuments.indexes.indexes.contains(index) {
                local.addAutoCreatedIndex(index, database: settings.databaseID)
                persistIndexes()
            }
        }
        return execution
    }

    /// `PUT /clients/{id}/indexes`: replaces the configuration.
    public func configureIndexes(_ json: JSON) throws(FiregateError) -> JSON {
        try beginDataCall()
        let parsed = try IndexConfiguration.parse(json)
        local.configureIndexes(parsed, database: settings.databaseID)
        persistIndexes()
        return indexesJSON()
    }

    /// `DELETE /clients/{id}/indexes` (deleteAllPersistentCacheIndexes).
    public func deleteAllIndexes() throws(FiregateError) -> JSON {
        try beginDataCall()
        local.removeAllIndexes()
        persistIndexes()
        return indexesJSON()
    }

    /// `POST /clients/{id}/indexes:enableAutoCreation` / `:disableAutoCreation`.
    public func setIndexAutoCreation(_ enabled: Bool) throws(FiregateError) -> JSON {
        try beginDataCall()
        local.setIndexAutoCreation(enabled)
        return indexesJSON()
    }

    /// The configuration in the Firebase CLI's format, with what the client does with it.
    public func indexesJSON() -> JSON {
        [
            "indexes": indexDefinitions,
            "autoCreation": .bool(local.indexAutoCreation),
            "used": .bool(usesIndexes),
            "entries": .int(Int64(local.remoteDocuments.indexes.entryCount)),
        ]
    }

    /// The definitions as saved and archived: each index with whether it was auto-created.
    var indexDefinitions: JSON {
        let indexes = local.remoteDocuments.indexes
        return .array(indexes.indexes.map { $0.json.withMember("autoCreated", .bool(indexes.autoCreated.contains($0))) })
    }

    func persistIndexes() {
        local.saveIndexes(indexDefinitions)
    }
}
