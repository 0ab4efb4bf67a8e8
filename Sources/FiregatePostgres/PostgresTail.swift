import FiregateModel
import FiregateStore
import Foundation
import PostgresNIO
import Synchronization

/// The follower's side of the commit log: every 250 ms, the heads of the scopes this replica
/// holds in memory without owning them; for each that moved, the log rows after what memory
/// holds, in `seq` order, handed to the engine (`follow`). What is applied is exactly the
/// owner's commits, once each, in order: `seq` is gap-free and a row is applied only after its
/// predecessor.
final class PostgresTail: Sendable {
    typealias DocumentApply = @Sendable (DatabaseID, ReplicatedDocumentChange) -> Void
    typealias TreeApply = @Sendable (String, JSON) -> Void

    private let session: PostgresSession
    private let documents = Mutex<DocumentApply?>(nil)
    private let tree = Mutex<TreeApply?>(nil)
    private nonisolated(unsafe) var timer: DispatchSourceTimer?
    private let queue = DispatchQueue(label: "firegate.postgres.tail")
    /// A poll is queued and has not started: a doorbell then adds nothing.
    private let pending = Mutex(false)

    init(location: PostgresLocation, logger: Logger) {
        session = PostgresSession(location: location, logger: logger)
    }

    func follow(documents apply: @escaping DocumentApply) { documents.withLock { $0 = apply } }
    func follow(tree apply: @escaping TreeApply) { tree.withLock { $0 = apply } }

    /// Starts polling (from the end of the store's `init`; `stop` ends it).
    func start(_ store: PostgresStore) {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + 0.25, repeating: 0.25)
        timer.setEventHandler { [weak self, weak store] in
            guard let self, let store else { return }
            pollLogged(store)
        }
        timer.resume()
        self.timer = timer
    }

    /// Polls now (the doorbell rang), on the same queue as the timer's polls.
    func pollSoon(_ store: PostgresStore) {
        let queued = pending.withLock { pending -> Bool in
            defer { pending = true }
            return pending
        }
        if queued { return }
        queue.async { [weak self, weak store] in
            guard let self, let store else { return }
            pollLogged(store)
        }
    }

    private func pollLogged(_ store: PostgresStore) {
        pending.withLock { $0 = false }
        store.followLock.lock()
        defer { store.followLock.unlock() }
        do {
            try poll(store)
        } catch {
            store.logger.warning("Following the PostgreSQL log failed: \(error)")
        }
    }

    func stop() {
        timer?.cancel()
        session.close()
    }

    private func poll(_ store: PostgresStore) throws(FiregateError) {
        let followed = store.leases.followed
        guard !followed.isEmpty else { return }
        let applyDocuments = documents.withLock { $0 }, applyTree = tree.withLock { $0 }
        let scopes = Array(followed.keys)
        for row in try session.query("SELECT scope, seq FROM fg_heads WHERE scope = ANY(\(scopes))").rows {
            let (scope, head) = try decode(row, (String, Int64).self)
            guard let known = followed[scope], head > known else { continue }
            let database = PostgresStore.database(ofScope: scope)
            let namespace = database == nil ? String(PostgresText.loaded(scope).dropFirst(2)) : nil
            var applied = known
            while applied < head {
                let rows = try session.query("""
                    SELECT seq, commit_us, body FROM fg_log WHERE scope = \(scope) AND seq > \(applied) ORDER BY seq LIMIT 1000
                    """).rows
                guard !rows.isEmpty else { break }
                for logRow in rows {
                    let (seq, commitUs, body) = try decode(logRow, (Int64, Int64, ByteBuffer).self)
                    guard seq == applied + 1 else {
                        // The rows after memory's position were pruned: take the scope as it is now.
                        if let database, let applyDocuments {
                            let documents = try store.read { session throws(FiregateError) -> [Document] in try store.loadScope(scope, session) }
                            let hold = store.leases.hold(scope)
                            applyDocuments(database, .reload(documents, LogPosition(generation: PostgresStore.generation(of: scope, stored: hold.generation), seq: hold.seq)))
                        } else if let namespace, let applyTree {
                            applyTree(namespace, ["reload": true])   // read again from the store on next use
                            store.leases.followed(scope, through: head)
                        }
                        applied = head
                        break
                    }
                    let entry = try json(body)
                    if let generation = entry["generation"]?.stringValue { store.leases.generation(scope, generation) }
                    if let database, let applyDocuments {
                        let generation = PostgresStore.generation(of: scope, stored: store.leases.hold(scope).generation)
                        applyDocuments(database, try PostgresTail.change(entry, at: LogPosition(generation: generation, seq: seq), commitUs: commitUs))
                    } else if let namespace, let applyTree, let change = entry["change"] {
                        applyTree(namespace, change)
                    }
                    applied = seq
                    store.leases.followed(scope, through: seq)
                }
            }
        }
    }

    /// A document log row as the engine applies it.
    static func change(_ body: JSON, at position: LogPosition, commitUs: Int64) throws(FiregateError) -> ReplicatedDocumentChange {
        if body["clear"] != nil { return .clear(position) }
        // A follower applies the after-images; its memory has the before-images already.
        let logged = try loggedCommit(body, seq: position.seq, commitUs: commitUs, withBefores: false)
        return .commit(upserts: logged.upserts, deletes: logged.deletes, commitTime: logged.commitTime, seq: position.seq)
    }

    /// A document log row read back whole; its before-images are empty in a row from before
    /// they were logged (`"before"` absent).
    /// `reusing` gives a version already in memory (by path and update time), taken as it is.
    static func loggedCommit(_ body: JSON, seq: Int64, commitUs: Int64,
                             reusing known: (ResourcePath, Int64) -> Document? = { _, _ in nil },
                             withBefores: Bool = true) throws(FiregateError) -> LoggedDocumentCommit {
        func documents(_ key: String) throws(FiregateError) -> [Document] {
            var result: [Document] = []
            for item in body[key]?.arrayValue ?? [] {
                guard let path = item["path"]?.stringValue, let created = item["createUs"]?.integerLike, let updated = item["updateUs"]?.integerLike else {
                    throw FiregateError(.dataLoss, "A commit-log row is damaged: \(JSONWriter.string(item))")
                }
                let resource = ResourcePath(ResourcePath.segments(of: path))
                if let same = known(resource, updated) {
                    result.append(same)
                    continue
                }
                result.append(Document(path: resource, fields: try Value.parseFields(item["fields"]),
                                       createTime: Timestamp(microseconds: created), updateTime: Timestamp(microseconds: updated)))
            }
            return result
        }
        let deletes = (body["deleted"]?.arrayValue ?? []).compactMap(\.stringValue).map { ResourcePath(ResourcePath.segments(of: $0)) }
        return LoggedDocumentCommit(seq: seq, commitTime: Timestamp(microseconds: commitUs), upserts: try documents("documents"), deletes: deletes,
                                    befores: withBefores ? try documents("before") : [])
    }
}
