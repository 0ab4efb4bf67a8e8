import FiregateModel
import FiregateStore
import Foundation
import OrderedCollections
import PostgresNIO

/// What one commit writes, from a run of queued units: each scope's head move (the fence),
/// the net document rows (a path written twice in the run is written once, as it ends), one log
/// row per unit and scope, and the tree's row statements in order.
struct CommitPlan {
    struct Head {
        var scope: String
        var oldSeq: Int64
        var newSeq: Int64
        var commitUs: Int64
        var epoch: Int64
    }

    struct Upsert {
        var scope: String
        var path: String
        var fields: ByteBuffer
        var createUs: Int64
        var updateUs: Int64
    }

    struct Delete {
        var scope: String
        var path: String
    }

    struct LogRow {
        var scope: String
        var seq: Int64
        var commitUs: Int64
        var body: ByteBuffer
    }

    private(set) var heads: [Head] = []
    private(set) var upserts: [Upsert] = []
    private(set) var deletes: [Delete] = []
    private(set) var log: [LogRow] = []
    private(set) var treeStatements: [PostgresQuery] = []
    /// Edge-cache changes that must commit with the documents (a queued batch leaving its
    /// client's queue), and the client each belongs to.
    private(set) var companions: [(client: String, change: EdgeCacheChange)] = []
    /// Statements a unit's write is made with or not at all (index of the unit): a reaper's
    /// progress, stored only while the claim is the reaper's and the operation has not run;
    /// a queued write's receipt, stored only while its sender runs the client and the write was
    /// not committed before. One returning no row rolls its unit back, failed with `refusal`.
    private(set) var checks: [Check] = []

    struct Check {
        var unit: Int
        var statement: PostgresQuery
        var refusal: FiregateError
    }
    /// Companions of another store, run once the commit is durable.
    private(set) var foreignCompanions: [any CommitCompanion] = []
    private(set) var oldSeq: [String: Int64] = [:]
    private(set) var newSeq: [String: Int64] = [:]

    var scopes: Set<String> { Set(oldSeq.keys) }
    /// Tree rows take statements of their own, in the same transaction as the fenced one.
    var needsTransaction: Bool { !treeStatements.isEmpty || !companions.isEmpty || !checks.isEmpty }

    static func scopes(of unit: PostgresCommitQueue.Unit) -> [String] {
        switch unit {
        case .documents(let batch, _): [PostgresStore.scope(batch.database)]
        case .tree(let batches, _): batches.map { PostgresStore.scope(namespace: $0.namespace) }
        case .edge, .alone: []
        }
    }

    init(units: [PostgresCommitQueue.Unit], leases: ScopeLeases, store: PostgresStore? = nil,
         now: Int64 = Int64(Date().timeIntervalSince1970 * 1_000_000)) {
        var epochs: [String: Int64] = [:]
        var commitUs: [String: Int64] = [:]
        var rows: [[String]: Upsert?] = [:]   // [scope, path] → the row as the run leaves it (nil: deleted)
        func nextSeq(_ scope: String, at time: Int64) -> Int64 {
            if oldSeq[scope] == nil {
                let hold = leases.hold(scope)
                oldSeq[scope] = hold.seq
                epochs[scope] = hold.epoch ?? -1
            }
            let seq = (newSeq[scope] ?? oldSeq[scope]!) + 1
            newSeq[scope] = seq
            commitUs[scope] = time
            return seq
        }
        for (index, unit) in units.enumerated() {
            switch unit {
            case .documents(let batch, _):
                let scope = PostgresStore.scope(batch.database)
                if let receipt = batch.receipt { checks.append(Check(receipt, unit: index)) }
                if let own = batch.companion as? PostgresEdgeCompanion, own.store === store {
                    companions.append((own.client, own.change))
                } else if let other = batch.companion {
                    foreignCompanions.append(other)
                }
                let time = batch.commitTime?.microseconds ?? batch.upserts.map(\.updateTime.microseconds).max() ?? now
                var written: [JSON] = []
                for document in batch.upserts {
                    let fields = Value.fieldsJSON(document.fields)
                    let path = document.path.canonical
                    rows[[scope, PostgresText.stored(path)]] = Upsert(scope: scope, path: PostgresText.stored(path), fields: ByteBuffer(bytes: JSONWriter.bytes(fields)),
                                                 createUs: document.createTime.microseconds, updateUs: document.updateTime.microseconds)
                    written.append(Self.logged(document, path: path, fields: fields))
                }
                for path in batch.deletes { rows[[scope, PostgresText.stored(path.canonical)]] = .some(nil) }
                // A batch that changes no document (a companion alone) is no commit of the
                // scope: no log row, as the engine's memory counts no commit for it.
                if batch.upserts.isEmpty && batch.deletes.isEmpty { continue }
                // The before-images let a replica that loads the database later undo the commit.
                let befores = batch.befores.map { Self.logged($0, path: $0.path.canonical, fields: Value.fieldsJSON($0.fields)) }
                let body = JSON.object(["documents": .array(written), "deleted": .array(batch.deletes.map { .string($0.canonical) }),
                                        "before": .array(befores)])
                log.append(LogRow(scope: scope, seq: nextSeq(scope, at: time), commitUs: time, body: ByteBuffer(bytes: JSONWriter.bytes(body))))
            case .tree(let batches, _):
                for batch in batches {
                    let scope = PostgresStore.scope(namespace: batch.namespace)
                    treeStatements += TreeRowStatements.statements(for: batch.operations, scope: scope)
                    // A reaper's progress commits with the operation's write, or neither does.
                    if let progress = batch.progress { checks.append(Check(progress, unit: index)) }
                    if let receipt = batch.receipt { checks.append(Check(receipt, unit: index)) }
                    var body: OrderedDictionary<String, JSON> = ["tree": .array(batch.operations.map(TreeRowStatements.json))]
                    if let change = batch.change { body["change"] = change }
                    log.append(LogRow(scope: scope, seq: nextSeq(scope, at: now), commitUs: now, body: ByteBuffer(bytes: JSONWriter.bytes(.object(body)))))
                }
            case .edge, .alone:
                break
            }
        }
        for (key, row) in rows {
            if let row { upserts.append(row) } else { deletes.append(Delete(scope: key[0], path: key[1])) }
        }
        heads = oldSeq.keys.sorted().map { scope in
            Head(scope: scope, oldSeq: oldSeq[scope]!, newSeq: newSeq[scope]!, commitUs: commitUs[scope]!, epoch: epochs[scope]!)
        }
    }
}

extension CommitPlan {
    /// A document as a log row holds it (`PostgresTail.document` reads it back).
    static func logged(_ document: Document, path: String, fields: JSON) -> JSON {
        .object(["path": .string(path), "fields": fields,
                 "createUs": .int(document.createTime.microseconds), "updateUs": .int(document.updateTime.microseconds)])
    }
}

extension CommitPlan.Check {
    init(_ progress: DisconnectProgress, unit: Int) {
        self.init(unit: unit, statement: PostgresStore.checkedStatement(progress),
                  refusal: FiregateError(.unavailable, "This write runs an onDisconnect operation another replica has claimed since, or that already ran; it was not made."))
    }

    init(_ receipt: QueuedWriteReceipt, unit: Int) {
        self.init(unit: unit, statement: PostgresStore.checkedStatement(receipt),
                  refusal: FiregateError(.unavailable, "Edge client \(receipt.client)'s queued write was committed before, or its client runs on another replica now; it was not made again."))
    }
}
