import FiregateModel
import XCTest

@testable import FiregateEdge

final class QueryListenerTests: XCTestCase {
    func snapshot(docs: Int, fromCache: Bool, syncChanged: Bool, pending: Bool = false, changes: [ViewDocumentChange.Kind] = [],
                  cached: Bool = false) -> ViewSnapshot {
        let t = Timestamp(seconds: 1, nanos: 0)
        let documents = (0..<docs).map {
            LocalDocument(document: Document(path: ResourcePath(["c", "d\($0)"]), fields: [:], createTime: t, updateTime: t),
                          hasLocalMutations: pending, hasCommittedMutations: false)
        }
        let viewChanges = changes.enumerated().map { ViewDocumentChange(kind: $1, document: documents[$0], oldIndex: -1, newIndex: $0) }
        return ViewSnapshot(documents: documents, changes: viewChanges, mutatedPaths: pending ? Set(documents.map(\.document.path)) : [],
                            fromCache: fromCache, syncStateChanged: syncChanged, hasCachedResults: cached)
    }

    func testEmptyCacheOnlineWaitsForTheServer() {
        var listener = QueryListener(includeMetadataChanges: true, cacheOnly: false)
        XCTAssertNil(listener.onViewSnapshot(snapshot(docs: 0, fromCache: true, syncChanged: true), onlineState: .online))
        let raised = listener.onViewSnapshot(snapshot(docs: 0, fromCache: false, syncChanged: true), onlineState: .online)
        XCTAssertEqual(raised?.fromCache, false)
    }

    func testEmptyCacheRaisesOnceOffline() {
        var listener = QueryListener(includeMetadataChanges: false, cacheOnly: false)
        XCTAssertNil(listener.onViewSnapshot(snapshot(docs: 0, fromCache: true, syncChanged: true), onlineState: .online))
        let raised = listener.onOnlineStateChange(.offline)
        XCTAssertEqual(raised?.fromCache, true)
        XCTAssertNil(listener.onOnlineStateChange(.offline), "raised once only")
    }

    func testCachedDocumentsRaiseAtOnceFromCache() {
        var listener = QueryListener(includeMetadataChanges: false, cacheOnly: false)
        let raised = listener.onViewSnapshot(snapshot(docs: 2, fromCache: true, syncChanged: true, changes: [.added, .added]), onlineState: .online)
        XCTAssertEqual(raised?.fromCache, true)
        XCTAssertEqual(raised?.changes.map(\.kind), [.added, .added])
    }

    func testCacheOnlyListenerNeverWaits() {
        var listener = QueryListener(includeMetadataChanges: false, cacheOnly: true)
        XCTAssertNotNil(listener.onViewSnapshot(snapshot(docs: 0, fromCache: true, syncChanged: true), onlineState: .online))
    }

    func testMetadataOnlySnapshotsNeedIncludeMetadataChanges() {
        var plain = QueryListener(includeMetadataChanges: false, cacheOnly: false)
        var metadata = QueryListener(includeMetadataChanges: true, cacheOnly: false)
        let first = snapshot(docs: 1, fromCache: true, syncChanged: true, changes: [.added])
        _ = plain.onViewSnapshot(first, onlineState: .online)
        _ = metadata.onViewSnapshot(first, onlineState: .online)
        let synced = snapshot(docs: 1, fromCache: false, syncChanged: true)
        XCTAssertNil(plain.onViewSnapshot(synced, onlineState: .online))
        XCTAssertNotNil(metadata.onViewSnapshot(synced, onlineState: .online))
        let metadataChange = snapshot(docs: 1, fromCache: false, syncChanged: false, pending: true, changes: [.metadata])
        XCTAssertNil(plain.onViewSnapshot(metadataChange, onlineState: .online), "a metadata change alone is filtered out")
        XCTAssertEqual(metadata.onViewSnapshot(metadataChange, onlineState: .online)?.changes.map(\.kind), [.metadata])
    }
}
