import FiregateBackend
import FiregateModel

/// Where a read may look (the SDK's GetOptions.source).
public enum ReadSource: String, Sendable {
    case `default`, server, cache
}

/// A read's answer with its metadata.
public struct EdgeRead<T: Sendable>: Sendable {
    public let value: T
    public let fromCache: Bool
    public let hasPendingWrites: Bool
    /// For queries: `index` or `scan` over the cache, `remote` when the server answered.
    public var plan: String?
    /// For queries: documents read to answer.
    public var documentsRead: Int?
}

/// One-time reads through the client: from the server when it can and may, else from the cache,
/// with the SDK's errors when neither works.
extension EdgeClient {
    public func getDocument(_ path: ResourcePath, source: ReadSource) async throws(FiregateError) -> EdgeRead<LocalDocument?> {
        try beginDataCall()
        let builder = localView()
        if source != .cache && remote.network.online {
            try await simulateLatency()
            let doc = (try? database.get(path).value) ?? nil
            local.beginOperation()
            local.acceptFromWatch(path, doc)
            let local = localView().document(path)
            updateViews()
            collectEagerGarbage()
            return EdgeRead(value: local, fromCache: false, hasPendingWrites: local?.hasLocalMutations ?? false)
        }
        switch source {
        case .server:
            if builder.isKnown(path) {
                throw .unavailable("Failed to get document from server. (However, this document does exist in the local cache. Run again without setting source to \"server\" to retrieve the cached document.)")
            }
            throw .unavailable("Failed to get document because the client is offline.")
        case .cache, .default:
            guard builder.isKnown(path) else {
                local.noteCacheRead(hit: false)
                if source == .cache {
                    throw .unavailable("Failed to get document from cache. (However, this document may exist on the server. Run again without setting 'source' in the GetOptions to attempt to retrieve the document from the server.)")
                }
                throw .unavailable("Failed to get document because the client is offline.")
            }
            local.noteCacheRead(hit: true)
            let local = builder.document(path)
            return EdgeRead(value: local, fromCache: true, hasPendingWrites: local?.hasLocalMutations ?? false)
        }
    }

    public func runQuery(_ query: Query, source: ReadSource) async throws(FiregateError) -> EdgeRead<[LocalDocument]> {
        try beginDataCall()
        if source != .cache && remote.network.online {
            try await simulateLatency()
            if let result = try? database.runQuery(query).value.documents {
                local.beginOperation()
                for doc in result { local.acceptFromWatch(doc.path, doc) }
                // Cached documents the server no longer lists: learn what became of them, so the
                // answer is the server's result (plus local writes), not a stale cache.
                let listed = Set(result.map(\.path))
                for doc in localView().run(query) where !doc.hasLocalMutations && !listed.contains(doc.document.path) {
                    local.acceptFromWatch(doc.document.path, (try? database.get(doc.document.path).value) ?? nil)
                }
            }
            let local = localView().run(query)
            updateViews()
            collectEagerGarbage()
            return EdgeRead(value: local, fromCache: false, hasPendingWrites: local.contains { $0.hasLocalMutations },
                            plan: "remote", documentsRead: local.count)
        }
        if source == .server {
            throw .unavailable("Failed to get documents from server. (However, these documents may exist in the local cache. Run again without setting source to \"server\" to retrieve the cached documents.)")
        }
        local.noteCacheRead(hit: true)
        let execution = runLocally(query)
        return EdgeRead(value: execution.documents, fromCache: true, hasPendingWrites: execution.documents.contains { $0.hasLocalMutations },
                        plan: execution.plan.rawValue, documentsRead: execution.documentsRead)
    }

    /// The local view of one document (for answering a write at once).
    public func localDocument(_ path: ResourcePath) -> LocalDocument? { localView().document(path) }

    /// Transactions go straight to the backend and need the network.
    public func requireNetwork(for operation: String) throws(FiregateError) {
        try beginDataCall()
        guard remote.network.online else {
            throw .unavailable("Failed to \(operation) because the client is offline.")
        }
    }

    func simulateLatency() async throws(FiregateError) {
        if remote.network.latencyMs > 0 { try? await Task.sleep(for: .milliseconds(remote.network.latencyMs)) }
    }
}
