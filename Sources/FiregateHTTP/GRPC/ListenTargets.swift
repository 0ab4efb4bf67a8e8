import FiregateBackend
import FiregateModel
import FiregateProto
import Foundation

typealias ListenResponse = Google_Firestore_V1_ListenResponse

/// The targets of one Listen stream and what the client has been told about them: turns
/// requests and commits into the responses of docs/wire/grpc.md (Listen) — per target
/// ADD, its documents, CURRENT; per commit the changed documents; and a global NO_CHANGE
/// (empty `target_ids`, `read_time`, resume token) once every target reflects the same commit,
/// which is the consistent snapshot clients raise events on.
struct ListenTargets {
    let database: DocumentDatabase
    private var targets: [Int32: Target] = [:]
    /// `shape(for:)`'s targets part, worked out once while the targets stay the same ones (the
    /// outer nil: not worked out; the inner: not shareable). Whatever adds, removes or replaces a
    /// target sets it to nil; a commit only moves targets on.
    private var shapeMemo: Shape??
    /// The newest commit the stream has processed, and its time.
    private(set) var sequence: Int64
    private var readTime: Timestamp
    /// A target was added or changed since the last global snapshot.
    private var snapshotPending = false
    private var nextAssignedID: Int32 = 1
    /// Judges each target as it is added, and every target again when the rules change: a
    /// denied one is removed with the denial as its cause.
    var access: ListenAccess?
    /// The connection's timeline lane, which hears what the client is told.
    var timeline: ListenTimeline?

    struct Target {
        enum Kind {
            case query(QueryMatches, window: [Document])
            case documents(Set<ResourcePath>)
        }

        var kind: Kind
        /// The commit its result reflects; commits up to here are already in it.
        var sequence: Int64
        /// What the client asked for, to start over from after an overflow.
        let request: Google_Firestore_V1_Target
    }

    init(database: DocumentDatabase, startingAfter sequence: Int64) {
        self.database = database
        self.sequence = sequence
        readTime = Timestamp(microseconds: 0)
    }

    var count: Int { targets.count }

    /// Whether target `id` sends whole documents (no projection): a document change a commit
    /// causes on it is then the same message on every stream with a target of that id.
    func sendsWholeDocuments(_ id: Int32) -> Bool {
        switch targets[id]?.kind {
        case .documents?: true
        case .query(let matches, _)?: matches.query.projection == nil
        case nil: false
        }
    }

    // MARK: requests

    mutating func handle(_ request: Google_Firestore_V1_ListenRequest) throws(FiregateError) -> [ListenResponse] {
        observed(try respond(to: request))
    }

    /// What the client is told, as the timeline hears it.
    private mutating func observed(_ responses: [ListenResponse]) -> [ListenResponse] {
        timeline?.observe(responses)
        return responses
    }

    private mutating func respond(to request: Google_Firestore_V1_ListenRequest) throws(FiregateError) -> [ListenResponse] {
        if !request.database.isEmpty, try FirestoreResourceName.database(request.database) != database.id {
            throw .invalidArgument("A Listen stream serves one database; \(request.database) is not \(database.id.name).")
        }
        switch request.targetChange {
        case .addTarget(let target)?: return add(target)
        case .removeTarget(let id)?:
            targets[id] = nil
            shapeMemo = nil
            return [ListenTargets.targetChange(.remove, [id])]
        case nil: throw .invalidArgument("A ListenRequest needs add_target or remove_target.")
        }
    }

    mutating func add(_ request: Google_Firestore_V1_Target) -> [ListenResponse] {
        var id = request.targetID
        if id == 0 {
            while targets[nextAssignedID] != nil { nextAssignedID += 1 }
            id = nextAssignedID
        }
        guard targets[id] == nil else {
            return [ListenTargets.removed(id, .invalidArgument("Target ID \(id) is already in use on this stream."))]
        }
        do {
            return try open(id, request)
        } catch {
            return [ListenTargets.removed(id, error)]
        }
    }

    private mutating func open(_ id: Int32, _ request: Google_Firestore_V1_Target) throws(FiregateError) -> [ListenResponse] {
        let resumeAfter = try resumePoint(request)
        var responses = [ListenTargets.targetChange(.add, [id])]
        let target: Target
        let start: (sequence: Int64, readTime: Timestamp)
        switch request.targetType {
        case .query(let queryTarget)?:
            let (databaseID, parent) = try FirestoreResourceName.document(queryTarget.parent)
            guard databaseID == database.id else { throw .invalidArgument("The target's parent lies outside \(database.id.name).") }
            guard !parent.isCollection else { throw .invalidArgument("A query's parent is the documents root or a document.") }
            let query = try Query(structuredQuery: try queryTarget.structuredQuery.restJSON(), parent: parent, database: database.id)
            try access?.judge(database)?.list(query, in: database)
            let listen = database.listen(query, bufferLimit: 1, resumeAfter: resumeAfter.sequence)
            listen.subscription.cancel()
            let window = listen.matches.window
            var before = listen.resumedWindow ?? []
            if resumeAfter.sequence == nil, let time = resumeAfter.readTime {
                before = try database.runQuery(query, consistency: .readTime(time)).value.documents
            }
            if resumeAfter.requested, listen.resumedWindow == nil, resumeAfter.readTime == nil {
                responses.append(ListenTargets.targetChange(.reset, [id]))
            }
            for change in DocumentChangeSet.changes(from: before, to: window, query: query, database: database.id) {
                responses.append(change.kind == .removed
                    ? ListenTargets.removedDocument(database.id.resourceName(change.document.path), id, deleted: false, readTime: listen.readTime)
                    : documentChange(change.document, id, mask: query.projection))
            }
            target = Target(kind: .query(listen.matches, window: window), sequence: listen.sequence, request: request)
            start = (listen.sequence, listen.readTime)
            if resumeAfter.requested { responses.append(ListenTargets.existenceFilter(id, count: window.count)) }
        case .documents(let documentsTarget)?:
            var paths = Set<ResourcePath>()
            // Each document is read on its own: the target reflects the earliest of those reads,
            // so a commit between two reads is applied (again, harmlessly) rather than skipped.
            var earliest: (sequence: Int64, readTime: Timestamp)?
            for name in documentsTarget.documents {
                let (databaseID, path) = try FirestoreResourceName.document(name)
                guard databaseID == database.id, path.isDocument else { throw .invalidArgument("\"\(name)\" is not a document of \(database.id.name).") }
                paths.insert(path)
            }
            if let judge = access?.judge(database) { try ListenTargets.check(paths, judge, database) }
            for path in paths.sorted(by: { ResourcePath.compare($0, $1) < 0 }) {
                let listen = database.listen(document: path, bufferLimit: 1, resumeAfter: resumeAfter.sequence)
                listen.subscription.cancel()
                if earliest.map({ listen.sequence < $0.sequence }) ?? true { earliest = (listen.sequence, listen.readTime) }
                if let document = listen.document {
                    if listen.resumedDocument.map({ $0 == document }) ?? false { continue }
                    responses.append(documentChange(document, id, mask: nil))
                } else if resumeAfter.requested {
                    responses.append(ListenTargets.removedDocument(database.id.resourceName(path), id, deleted: true, readTime: listen.readTime))
                }
            }
            let snapshot = earliest ?? (sequence, readTime)
            target = Target(kind: .documents(paths), sequence: snapshot.sequence, request: request)
            start = snapshot
        case nil:
            throw .invalidArgument("A target needs a query or documents.")
        }
        var current = ListenTargets.targetChange(.current, [id])
        current.targetChange.resumeToken = token(start.sequence)
        current.targetChange.readTime = start.readTime.proto
        responses.append(current)
        targets[id] = target
        shapeMemo = nil
        timeline?.recorder.listenOpened(String(id), target: ListenTargets.describe(request))
        readTime = max(readTime, start.readTime)
        snapshotPending = true
        return responses + globalSnapshotIfConsistent()
    }

    /// Where a target resumes: a resume token of either surface, or a read time.
    private func resumePoint(_ request: Google_Firestore_V1_Target) throws(FiregateError) -> (sequence: Int64?, readTime: Timestamp?, requested: Bool) {
        switch request.resumeType {
        case .resumeToken(let bytes)?:
            guard !bytes.isEmpty else { return (nil, nil, false) }
            return (String(data: bytes, encoding: .utf8).flatMap(database.sequence(fromResumeToken:)), nil, true)
        case .readTime(let time)?:
            return (nil, Timestamp(proto: time), true)
        case nil:
            return (nil, nil, false)
        }
    }

    // MARK: commits

    /// What a commit's answer depends on besides the commit, when the stream is in the common
    /// state of a fan-out: only documents targets, none `once`, each caught up with the stream,
    /// no snapshot pending and a read time not past the commit's. Streams of one shape get the
    /// same answer to a commit, so it is worked out once (`apply(_:sharing:)`).
    struct Shape: Hashable, Sendable {
        private final class Storage: Sendable {
            let database: DatabaseID
            let targets: [Int32: Set<ResourcePath>]
            /// Hashed once: a fan-out looks the shape up for every stream.
            let hash: Int

            init(database: DatabaseID, targets: [Int32: Set<ResourcePath>]) {
                self.database = database
                self.targets = targets
                var hasher = Hasher()
                hasher.combine(database)
                hasher.combine(targets)
                hash = hasher.finalize()
            }
        }

        /// Shared by the streams that `adopt` one shape, which then compare by identity.
        private let storage: Storage

        init(database: DatabaseID, targets: [Int32: Set<ResourcePath>]) {
            storage = Storage(database: database, targets: targets)
        }

        static func == (a: Shape, b: Shape) -> Bool {
            a.storage === b.storage
                || (a.storage.hash == b.storage.hash && a.storage.database == b.storage.database && a.storage.targets == b.storage.targets)
        }

        func hash(into hasher: inout Hasher) { hasher.combine(storage.hash) }
    }

    /// Takes `shape`, equal to the stream's own, as its own: a fan-out keeps the shape of the
    /// stream a commit reached first, and streams holding that one compare by identity.
    mutating func adopt(_ shape: Shape) {
        if case .some(.some(let own)) = shapeMemo, own == shape { shapeMemo = .some(shape) }
    }

    /// The stream's shape for `record`, or nil when its answer depends on more.
    mutating func shape(for record: CommitRecord) -> Shape? {
        guard record.sequence > sequence, !snapshotPending, readTime <= record.commitTime, !targets.isEmpty,
              targets.values.allSatisfy({ $0.sequence == sequence }) else { return nil }
        if let memo = shapeMemo { return memo }
        var shape: [Int32: Set<ResourcePath>]? = [:]
        for (id, target) in targets {
            guard case .documents(let paths) = target.kind, !target.request.once else {
                shape = nil
                break
            }
            shape?[id] = paths
        }
        let memo = shape.map { Shape(database: database.id, targets: $0) }
        shapeMemo = .some(memo)
        return memo
    }

    /// Applies `record` when a stream of the same `shape(for: record)` was answered already:
    /// the state moves on as `apply` would move it, and the timeline hears `steps`, what that
    /// answer told it.
    mutating func apply(_ record: CommitRecord, sharing steps: ListenTimeline.Steps) {
        sequence = record.sequence
        readTime = max(readTime, record.commitTime)
        // By index: iterating `keys` would hold the storage and copy it at the first write.
        var index = targets.values.startIndex
        while index != targets.values.endIndex {
            targets.values[index].sequence = record.sequence
            targets.values.formIndex(after: &index)
        }
        timeline?.observe(steps)
    }

    /// The responses one commit causes; commits already reflected by a target are skipped for it.
    mutating func apply(_ record: CommitRecord) -> [ListenResponse] {
        guard record.sequence > sequence else { return [] }
        sequence = record.sequence
        readTime = max(readTime, record.commitTime)
        var responses: [ListenResponse] = []
        for id in targets.keys.sorted() {
            guard var target = targets[id], record.sequence > target.sequence else { continue }
            target.sequence = record.sequence
            switch target.kind {
            case .query(var matches, let window):
                var touched = false
                for change in record.changes where matches.apply(path: change.path, before: change.before, after: change.after) {
                    touched = true
                }
                guard touched else {
                    target.kind = .query(matches, window: window)
                    break
                }
                let next = matches.window
                for change in DocumentChangeSet.changes(from: window, to: next, query: matches.query, database: database.id) {
                    if change.kind == .removed {
                        let deleted = record.changes.contains { $0.path == change.document.path && $0.after == nil }
                        responses.append(ListenTargets.removedDocument(database.id.resourceName(change.document.path), id, deleted: deleted,
                                                                       readTime: record.commitTime))
                    } else {
                        responses.append(documentChange(change.document, id, mask: matches.query.projection, at: record.sequence))
                    }
                }
                target.kind = .query(matches, window: next)
            case .documents(let paths):
                for change in record.changes where paths.contains(change.path) {
                    if let after = change.after {
                        responses.append(documentChange(after, id, mask: nil, at: record.sequence))
                    } else if change.before != nil {
                        responses.append(ListenTargets.removedDocument(database.id.resourceName(change.path), id, deleted: true,
                                                                       readTime: record.commitTime))
                    }
                }
            }
            // The same target moved on (a documents target stays one): `shapeMemo` holds.
            targets[id] = target
        }
        if !responses.isEmpty { snapshotPending = true }
        return observed(responses + globalSnapshotIfConsistent())
    }

    /// A `get` of each document of a documents target.
    static func check(_ paths: Set<ResourcePath>, _ judge: DocumentRulesJudge, _ database: DocumentDatabase) throws(FiregateError) {
        let sorted = paths.sorted { ResourcePath.compare($0, $1) < 0 }
        try judge.get(try sorted.map { path throws(FiregateError) in (path, try database.get(path).value) }, in: database)
    }

    /// After a rules change (a heartbeat): the targets the listener may no longer read are
    /// removed, each with the denial as its cause.
    mutating func revocations() -> [ListenResponse] {
        guard let judge = access?.rejudge(database) else { return [] }
        var responses: [ListenResponse] = []
        for (id, target) in targets.sorted(by: { $0.key < $1.key }) {
            do {
                switch target.kind {
                case .query(let matches, _): try judge.list(matches.query, in: database)
                case .documents(let paths): try ListenTargets.check(paths, judge, database)
                }
            } catch {
                targets[id] = nil
                shapeMemo = nil
                responses.append(ListenTargets.removed(id, error))
            }
        }
        return observed(responses)
    }

    /// After the stream fell behind: every target starts over from the current state.
    mutating func resynchronise() -> [ListenResponse] {
        var responses: [ListenResponse] = []
        let previous = targets
        targets = [:]
        shapeMemo = nil
        for (id, target) in previous.sorted(by: { $0.key < $1.key }) {
            var request = target.request
            request.targetID = id
            request.resumeType = nil
            responses.append(ListenTargets.targetChange(.reset, [id]))
            responses += add(request).filter { $0.targetChange.targetChangeType != .add }
        }
        // The commits the stream missed are in the new snapshots.
        sequence = max(sequence, targets.values.map(\.sequence).max() ?? sequence)
        return observed(responses + globalSnapshotIfConsistent())
    }

    // MARK: responses

    private mutating func globalSnapshotIfConsistent() -> [ListenResponse] {
        guard snapshotPending, targets.values.allSatisfy({ $0.sequence <= sequence }) else { return [] }
        snapshotPending = false
        var global = ListenTargets.targetChange(.noChange, [])
        global.targetChange.readTime = readTime.proto
        global.targetChange.resumeToken = token(sequence)
        var responses = [global]
        // `once` targets end after their first consistent snapshot.
        for (id, target) in targets.sorted(by: { $0.key < $1.key }) where target.request.once {
            targets[id] = nil
            shapeMemo = nil
            responses.append(ListenTargets.targetChange(.remove, [id]))
        }
        return responses
    }

    /// A target as the timeline names it: a query's parent and collection, or its documents.
    static func describe(_ request: Google_Firestore_V1_Target) -> String {
        switch request.targetType {
        case .query(let query)?:
            let parent = ListenTimeline.path(query.parent + "/")
            let collections = query.structuredQuery.from.map(\.collectionID).joined(separator: ",")
            return parent.isEmpty || parent == query.parent + "/" ? collections : parent + collections
        case .documents(let documents)?:
            return documents.documents.map(ListenTimeline.path).joined(separator: " ")
        case nil:
            return ""
        }
    }

    private func token(_ sequence: Int64) -> Data { Data(database.resumeToken(sequence: sequence).utf8) }

    /// `sequence`: the commit the document is as of, when it comes from one (its message is then
    /// shared with the other streams that commit reaches).
    private func documentChange(_ document: Document, _ id: Int32, mask: [FieldPath]?, at sequence: Int64? = nil) -> ListenResponse {
        var response = ListenResponse()
        if let sequence, mask == nil {
            response.documentChange.document = CommittedDocumentProtos.shared.proto(document, database: database.id, sequence: sequence)
        } else {
            response.documentChange.document = document.proto(database: database.id, mask: mask)
        }
        response.documentChange.targetIds = [id]
        return response
    }

    static func removedDocument(_ name: String, _ id: Int32, deleted: Bool, readTime: Timestamp) -> ListenResponse {
        var response = ListenResponse()
        if deleted {
            response.documentDelete.document = name
            response.documentDelete.removedTargetIds = [id]
            response.documentDelete.readTime = readTime.proto
        } else {
            response.documentRemove.document = name
            response.documentRemove.removedTargetIds = [id]
            response.documentRemove.readTime = readTime.proto
        }
        return response
    }

    static func targetChange(_ type: Google_Firestore_V1_TargetChange.TargetChangeType, _ ids: [Int32]) -> ListenResponse {
        var response = ListenResponse()
        response.targetChange.targetChangeType = type
        response.targetChange.targetIds = ids
        return response
    }

    static func removed(_ id: Int32, _ error: FiregateError) -> ListenResponse {
        var response = targetChange(.remove, [id])
        response.targetChange.cause.code = Int32(error.status.code)
        response.targetChange.cause.message = error.message
        return response
    }

    static func existenceFilter(_ id: Int32, count: Int) -> ListenResponse {
        var response = ListenResponse()
        response.filter.targetID = id
        response.filter.count = Int32(count)
        return response
    }
}
