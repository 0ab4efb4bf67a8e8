import FiregateModel

/// The steps every surface records alike, so a client's lane and a connection's read the same
/// (docs/timeline.md, "Kinds").
extension TimelineRecorder {
    public func lifecycle(_ action: String, reason: String? = nil) {
        record(.lifecycle, [("action", .string(action))] + (reason.map { [("reason", .string($0))] } ?? []))
    }

    public func network(online: Bool, cause: String? = nil) {
        record(.network, [("online", .bool(online))] + (cause.map { [("cause", .string($0))] } ?? []))
    }

    /// `documents`: the written paths (the first `TimelineEvent.listedChanges`); `writes` counts them all.
    public func writeQueued(_ writeID: String, documents: [String]) {
        record(.writeQueued, [("writeId", .string(writeID))] + Self.listed(documents))
    }

    public func writeSent(_ writeID: String, documents: [String]? = nil) {
        record(.writeSent, [("writeId", .string(writeID))] + (documents.map(Self.listed) ?? []))
    }

    /// `writes` (how many) and `documents` (the first `listedChanges` paths).
    private static func listed(_ documents: [String]) -> [(String, JSON)] {
        [("writes", .int(Int64(documents.count))), ("documents", .array(documents.prefix(TimelineEvent.listedChanges).map(JSON.string)))]
    }

    /// `writes`: how many the write held, when no `writeSent` step said so (a unary Commit).
    public func writeAcknowledged(_ writeID: String, commitTime: Timestamp?, writes: Int? = nil) {
        record(.writeAcknowledged, [("writeId", .string(writeID))] + (writes.map { [("writes", .int(Int64($0)))] } ?? []), commitTime: commitTime)
    }

    /// `decision`: the rules decision that refused it (its trace is at `/emulator/v1/rules/decisions/{id}`).
    public func writeRejected(_ writeID: String, error: FiregateError, decision: String?) {
        var fields: [(String, JSON)] = [("writeId", .string(writeID)), ("status", .string(error.status.rawValue)), ("message", .string(error.message))]
        if let decision { fields.append(("decision", .string(decision))) }
        record(.writeRejected, fields)
    }

    public func listenOpened(_ listener: String, target: String) {
        record(.listenOpened, [("listener", .string(listener)), ("target", .string(target))])
    }

    public func listenClosed(_ listener: String, reason: String? = nil) {
        record(.listenClosed, [("listener", .string(listener))] + (reason.map { [("reason", .string($0))] } ?? []))
    }

    /// A snapshot raised: `changes` counts the changed documents, `changed` lists the first
    /// `TimelineEvent.listedChanges` of them.
    public func snapshot(_ listener: String, fromCache: Bool?, hasPendingWrites: Bool?, documents: Int?, changes: Int, changed: [TimelineChange],
                         extra: [(String, JSON)] = []) {
        let fields = Self.snapshotFields(listener, fromCache: fromCache, hasPendingWrites: hasPendingWrites, documents: documents, changes: changes,
                                         extra: extra)
        recordSnapshot(fields: fields, changed: changed.count > TimelineEvent.listedChanges ? Array(changed.prefix(TimelineEvent.listedChanges)) : changed)
    }

    /// A snapshot step's fields, which a commit fanned out to many listeners works out once
    /// for all of them (`recordSnapshot`).
    public static func snapshotFields(_ listener: String, fromCache: Bool?, hasPendingWrites: Bool?, documents: Int?, changes: Int,
                                      extra: [(String, JSON)] = []) -> [(String, JSON)] {
        var fields: [(String, JSON)] = []
        fields.reserveCapacity(5 + extra.count)
        fields.append(("listener", .string(listener)))
        if let fromCache { fields.append(("fromCache", .bool(fromCache))) }
        if let hasPendingWrites { fields.append(("hasPendingWrites", .bool(hasPendingWrites))) }
        if let documents { fields.append(("documents", .int(Int64(documents)))) }
        fields.append(("changes", .int(Int64(changes))))
        fields += extra
        return fields
    }

    /// A snapshot step from `snapshotFields` and at most `TimelineEvent.listedChanges` changes.
    public func recordSnapshot(fields: [(String, JSON)], changed: [TimelineChange]) {
        record(.snapshot, fields, changed: changed)
    }

    public func onDisconnect(registered: Bool, path: String, op: String) {
        record(registered ? .onDisconnectRegistered : .onDisconnectRan, [("path", .string(path)), ("op", .string(op))])
    }
}
