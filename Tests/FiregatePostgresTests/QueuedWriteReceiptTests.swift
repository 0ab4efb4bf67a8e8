import FiregateModel
@testable import FiregatePostgres
import FiregateStore
import XCTest

/// An edge client's queued write committed for another replica (`QueuedWriteReceipt`): stored
/// with its answer in the commit's transaction, once, and only while the sender runs the client.
final class QueuedWriteReceiptTests: XCTestCase {
    private let db = DatabaseID(project: "p", database: "(default)")

    func testAQueuedBatchCommitsOnceLeavesTheQueueAndIsRefusedFromAReplicaThatLostItsClient() async throws {
        let database = try TestDatabase()
        let a = try database.store("a"), b = try database.store("b")
        defer { a.close(); b.close() }
        // b runs the client; its batch 1 (written at 77 µs) is queued in the store.
        XCTAssertNil(try b.claimClient("phone"))
        try database.sql("INSERT INTO fg_edge_mutations (client_id, batch_id, local_write_us, writes, uid) VALUES ('phone', 1, 77, '[]', 'u')")
        let storage = PostgresDocumentStorage(store: a)
        func commit(_ n: Int64, epoch: Int64, id: Int64 = 1, stamp: Int64 = 77) async -> Status? {
            let now = Timestamp(microseconds: 1_700_000_000_000_000 + n)
            let document = Document(path: ResourcePath(["c", "d"]), fields: ["n": .integer(n)], createTime: now, updateTime: now)
            let receipt = QueuedWriteReceipt(client: "phone", kind: .batch, id: id, stamp: stamp, epoch: epoch, answer: Array("{\"n\":\(n)}".utf8))
            let result = await withCheckedContinuation { continuation in
                storage.enqueue(DocumentPersistBatch(database: db, upserts: [document], deletes: [], commitTime: now, receipt: receipt)) {
                    continuation.resume(returning: $0)
                }
            }
            if case .failure(let error) = result { return (error as? FiregateError)?.status ?? .unknown }
            return nil
        }
        let first = await commit(1, epoch: 1)
        XCTAssertNil(first)
        XCTAssertEqual(try database.sql("SELECT count(*)::text FROM fg_edge_mutations"), [["0"]], "the commit takes the batch off the queue")
        let stored = try a.storedAnswer(QueuedWriteReceipt(client: "phone", kind: .batch, id: 1, stamp: 77))
        XCTAssertEqual(stored.map { String(decoding: $0, as: UTF8.self) }, "{\"n\":1}")
        XCTAssertNil(try a.storedAnswer(QueuedWriteReceipt(client: "phone", kind: .batch, id: 1, stamp: 78)), "another batch of id 1")
        // Sent again: not made.
        let again = await commit(2, epoch: 1)
        XCTAssertEqual(again, .unavailable)
        // From a replica that no longer runs the client (epoch 0 is not its owner's): not made.
        let stale = await commit(3, epoch: 0, id: 2, stamp: 80)
        XCTAssertEqual(stale, .unavailable)
        XCTAssertNil(try a.storedAnswer(QueuedWriteReceipt(client: "phone", kind: .batch, id: 2, stamp: 80)))
        XCTAssertEqual(try database.sql("SELECT convert_from(fields, 'UTF8') FROM fg_documents"), [["{\"n\":{\"integerValue\":\"1\"}}"]])
        XCTAssertEqual(try database.sql("SELECT count(*)::text FROM fg_edge_receipts"), [["1"]])
        XCTAssertEqual(b.clientEpoch("phone"), 1)
        XCTAssertNil(a.clientEpoch("phone"))
    }

    func testAQueuedTreeWriteCommitsOnceAndAClearedQueueForgetsItsReceipts() async throws {
        let database = try TestDatabase()
        let a = try database.store("a")
        defer { a.close() }
        XCTAssertNil(try a.claimClient("app"))
        try database.sql("INSERT INTO fg_edge_tree_writes (client_id, write_id, body) VALUES ('app', 4, '{}')")
        func write(_ value: String) async -> Status? {
            let receipt = QueuedWriteReceipt(client: "app", kind: .tree, id: 4, stamp: 9, epoch: 1, answer: Array("{}".utf8))
            do {
                try await PostgresTreeStorage(store: a).commit([TreeStorageBatch(namespace: "ns", operations: [.putRow(TreeStorageRow(path: "p", value: value, priority: nil))],
                                                                                 receipt: receipt)])
                return nil
            } catch {
                return (error as? FiregateError)?.status ?? .unknown
            }
        }
        let first = await write("1"), second = await write("2")
        XCTAssertNil(first)
        XCTAssertEqual(second, .unavailable)
        XCTAssertEqual(try database.sql("SELECT value FROM fg_tree_rows WHERE scope = 't:ns' AND path = 'p'"), [["1"]])
        XCTAssertEqual(try database.sql("SELECT count(*)::text FROM fg_edge_tree_writes"), [["0"]])
        // Write ids start again in a cleared queue: the old receipts go with it.
        for statement in EdgeCacheStatements.statements(.clearTree(includingAuth: false), client: "app") {
            if case .run(let query) = statement { try database.sql(query.sql.replacingOccurrences(of: "$1", with: "'app'")) }
        }
        XCTAssertEqual(try database.sql("SELECT count(*)::text FROM fg_edge_receipts"), [["0"]])
    }

    func testTheReceiptsHeaderCarriesAnyClientIDAndRefusesWhatItCannotRead() {
        let receipt = QueuedWriteReceipt(client: "a b/ü%", kind: .tree, id: 7, stamp: -3, epoch: 2)
        let read = QueuedWriteReceipt(header: receipt.header)
        XCTAssertEqual(read, receipt)
        XCTAssertEqual(read?.epoch, 2)
        XCTAssertFalse(receipt.header.contains("/"))
        for bad in ["", "batch 1 2 3", "batch x 2 3 c", "other 1 2 3 c", "batch 1 2 3 ", "batch 1 2 3 c d"] {
            XCTAssertNil(QueuedWriteReceipt(header: bad), bad)
        }
    }
}
