import FiregateModel

/// What an edge listener stream carries, already rendered.
public enum EdgeEvent: Sendable {
    /// `event: snapshot` with its client-wide id and JSON body.
    case snapshot(id: Int64, body: [UInt8])
    /// `event: sync`: the marker a test asked for with `gates:sync`.
    case sync(token: String)
    /// `event: snapshotsInSync`: every listener has raised its snapshot of the latest change
    /// (the SDK's `onSnapshotsInSync`).
    case snapshotsInSync
    /// `event: clientState`: a notification a web tab broadcasts to the other tabs of its
    /// persistence (the SDK's SharedClientState: online state, mutation batch states, query
    /// target states).
    case clientState(JSON)
    /// `event: error`, then the stream ends.
    case error(FiregateError)
    /// A keep-alive comment (the stream's own timer).
    case keepAlive
}

/// How a listener wants its snapshots rendered.
public struct ListenerOptions: Sendable {
    public var includeMetadataChanges = false
    /// `source=cache`: never ask the server.
    public var cacheOnly = false
    public var serverTimestamps = ServerTimestampBehavior.none
    /// A single-document listen renders `{"metadata","exists","document"}`.
    public var document: ResourcePath?
    /// The tab that opened the listener, on a shared persistence: closing the tab ends it.
    public var owner: String?
    /// `changesOnly=true`: a query snapshot leaves out `documents` (the whole result) and
    /// carries only `changes`, so a large result costs its changes, not its size, per event.
    public var changesOnly = false

    public init() {}
}

extension ViewSnapshot {
    /// The edge listener event body (docs/edge-clients.md).
    func render(database: DatabaseID, options: ListenerOptions) -> JSON {
        let metadata: JSON = ["fromCache": .bool(fromCache), "hasPendingWrites": .bool(hasPendingWrites)]
        if let path = options.document {
            let doc = documents.first { $0.document.path == path }
            var body: JSON = ["metadata": metadata, "exists": .bool(doc != nil)]
            if let doc { body = body.withMember("document", renderDocument(doc, database: database, options: options)) }
            return body
        }
        var body: JSON = ["metadata": metadata]
        if !options.changesOnly {
            body = body.withMember("documents", .array(documents.map { renderDocument($0, database: database, options: options) }))
        }
        return body.withMember("changes", .array(changes.map { change in
            [
                "type": .string(change.kind.name),
                "oldIndex": .int(Int64(change.oldIndex)),
                "newIndex": .int(Int64(change.newIndex)),
                "document": renderDocument(change.document, database: database, options: options),
            ]
        }))
    }

    func renderDocument(_ doc: LocalDocument, database: DatabaseID, options: ListenerOptions) -> JSON {
        LocalDocument.render(doc, pending: mutatedPaths.contains(doc.document.path), database: database, serverTimestamps: options.serverTimestamps)
    }
}

extension LocalDocument {
    /// A Firestore Document JSON plus `"metadata":{"hasPendingWrites"}`, with pending server
    /// timestamps shown per `serverTimestamps`.
    public static func render(_ doc: LocalDocument, pending: Bool, database: DatabaseID, serverTimestamps: ServerTimestampBehavior) -> JSON {
        var document = doc.document
        document.fields = serverTimestamps.resolve(document.fields)
        return document.json(database: database).withMember("metadata", ["hasPendingWrites": .bool(pending)])
    }
}
