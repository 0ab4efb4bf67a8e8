import FiregateBackend
import FiregateModel
import Hummingbird
import HTTPTypes
import ServiceLifecycle

/// `:listen` over Server-Sent Events: a document or a query, followed live.
///
/// The stream opens with the full result (or, with `Last-Event-ID`, the changes since that
/// event), then sends one `snapshot` per commit that changes the result. A reader that falls
/// behind its buffer gets a fresh full result; a reset or shutdown ends the stream with
/// `event: error`.
struct DocumentListenRoute {
    let database: DocumentDatabase
    let options: ListenOptions
    let ticker: KeepAliveTicker
    let frames: ListenFrameCache
    /// Judges the listen before anything is streamed, and again when the rules change.
    var access: ListenAccess?

    func open(_ path: ResourcePath, _ request: Request) async throws(FiregateError) -> Response {
        let params = try QueryParameters(request)
        let queryJSON = try await ListenQueryParameter.structuredQuery(params, request)
        let lastEventID = request.headers[HTTPField.Name("Last-Event-ID")!] ?? params.first("lastEventId")
        let resumeAfter = lastEventID.flatMap { database.sequence(fromResumeToken: $0) }
        if let resumeAfter, resumeAfter > database.currentSequence { await database.awaitSequence(resumeAfter, timeout: .seconds(2)) }
        let changesOnly = try params.bool("changesOnly") ?? false
        if let queryJSON {
            guard !path.isCollection else { throw .invalidArgument("A query listen names the root or a parent document, not a collection.") }
            let query = try Query(structuredQuery: queryJSON, parent: path, database: database.id)
            try access?.judge(database)?.list(query, in: database)
            let stream = QueryListenStream(database: database, query: query, options: options, ticker: ticker, frames: frames,
                                           changesOnly: changesOnly, resumeAfter: resumeAfter, resuming: lastEventID != nil, access: access)
            return Response(status: .ok, headers: ServerSentEvents.headers, body: ResponseBody { writer in
                await InboundClose.cancelling(request) { await stream.run(&writer) }
            })
        }
        guard path.isDocument else {
            throw .invalidArgument("listen needs a document path, or a query (?query=<structuredQuery JSON> or a body).")
        }
        if let judge = access?.judge(database) { try judge.get([(path, try database.get(path).value)], in: database) }
        var opened = DocumentListenStream(database: database, path: path, options: options, ticker: ticker, frames: frames,
                                          resumeAfter: resumeAfter, resuming: lastEventID != nil)
        opened.access = access
        let stream = opened
        return Response(status: .ok, headers: ServerSentEvents.headers, body: ResponseBody { writer in
            await InboundClose.cancelling(request) { await stream.run(&writer) }
        })
    }
}

/// Runs a feed subscription until it closes, the client goes away or the server shuts down.
enum ListenLoop {
    /// `revoked` is asked at each heartbeat (the rules changed): a denial ends the stream with it.
    static func run(_ subscription: FeedSubscription, ticker: KeepAliveTicker, writer: inout any ResponseBodyWriter,
                    revoked: () -> FiregateError? = { nil },
                    handle: (FeedEvent, inout any ResponseBodyWriter) async throws -> Bool) async {
        ticker.register(subscription)
        defer {
            ticker.unregister(subscription)
            subscription.cancel()
        }
        do {
            try await withGracefulShutdownHandler {
                while let event = await subscription.next() {
                    if case .heartbeat = event {
                        if let denial = revoked() {
                            try await writer.write(ServerSentEvents.frame(event: "error", json: JSON.errorBody(denial)))
                            break
                        }
                        try await writer.write(ServerSentEvents.keepAlive)
                        continue
                    }
                    if case .closed(let error) = event {
                        try await writer.write(ServerSentEvents.frame(event: "error", json: JSON.errorBody(error)))
                        break
                    }
                    guard try await handle(event, &writer) else { break }
                }
            } onGracefulShutdown: {
                subscription.deliver(.closed(FiregateError(.unavailable, "The server is shutting down.")))
            }
            try await writer.finish(nil)
        } catch {
            // The client went away: nothing to report.
        }
    }
}

/// One query listener's view: the match set, the last result sent and the feed position.
struct QueryListenStream: Sendable {
    let database: DocumentDatabase
    let query: Query
    let options: ListenOptions
    let ticker: KeepAliveTicker
    let frames: ListenFrameCache
    let changesOnly: Bool
    let resumeAfter: Int64?
    let resuming: Bool
    let access: ListenAccess?

    func run(_ writer: inout any ResponseBodyWriter) async {
        let start = database.listen(query, bufferLimit: options.bufferLimit, resumeAfter: resumeAfter)
        var access = self.access
        let database = database, query = query
        // Listeners of the same query whose windows reflect the same commit share their frames.
        let framePrefix = "\(database.id.name)|\(query.canonicalID)|\(changesOnly)|"
        var matches = start.matches
        var sequence = start.sequence
        var window = matches.window
        // The commit the window reflects: with the query, it identifies the window.
        var windowSequence = start.sequence
        let first: [ViewChange]
        if let resumed = start.resumedWindow {
            first = DocumentChangeSet.changes(from: resumed, to: window, query: query, database: database.id)
        } else {
            first = DocumentChangeSet.changes(from: [], to: window, query: query, database: database.id)
        }
        do {
            try await writer.write(frame(first, window: window, readTime: start.readTime, sequence: sequence,
                                         reset: resuming && start.resumedWindow == nil))
        } catch {
            start.subscription.cancel()
            return
        }
        await ListenLoop.run(start.subscription, ticker: ticker, writer: &writer, revoked: {
            access?.revocation(database) { judge throws(FiregateError) in try judge.list(query, in: database) }
        }) { event, writer in
            switch event {
            case .commit(let record):
                guard record.sequence > sequence else { return true }
                sequence = record.sequence
                var touched = false
                for change in record.changes where matches.apply(path: change.path, before: change.before, after: change.after) {
                    touched = true
                }
                guard touched else { return true }
                let next = matches.window
                let changes = DocumentChangeSet.changes(from: window, to: next, query: query, database: database.id)
                let previous = windowSequence
                window = next
                windowSequence = record.sequence
                if !changes.isEmpty {
                    let bytes = frames.frame(framePrefix + "\(previous)>\(record.sequence)") {
                        frame(changes, window: next, readTime: record.commitTime, sequence: record.sequence, reset: false)
                    }
                    try await writer.write(bytes)
                }
            case .overflow:
                // Fell behind: start over from the current state and send it whole.
                let fresh = database.listen(query, bufferLimit: 1, resumeAfter: nil)
                fresh.subscription.cancel()
                matches = fresh.matches
                sequence = fresh.sequence
                windowSequence = fresh.sequence
                window = matches.window
                let all = DocumentChangeSet.changes(from: [], to: window, query: query, database: database.id)
                try await writer.write(frame(all, window: window, readTime: fresh.readTime, sequence: sequence, reset: true))
            case .closed, .heartbeat:
                break
            }
            return true
        }
    }

    func frame(_ changes: [ViewChange], window: [Document], readTime: Timestamp, sequence: Int64, reset: Bool) -> ByteBuffer {
        var body: JSON = ["readTime": .string(readTime.rfc3339)]
        if reset { body = body.withMember("reset", true) }
        if !changesOnly { body = body.withMember("documents", .array(window.map { $0.json(database: database.id, mask: query.projection) })) }
        body = body.withMember("changes", .array(changes.map { change in
            [
                "type": .string(change.kind.rawValue),
                "oldIndex": .int(Int64(change.oldIndex)),
                "newIndex": .int(Int64(change.newIndex)),
                "document": change.document.json(database: database.id, mask: query.projection),
            ]
        }))
        return ServerSentEvents.frame(event: "snapshot", id: database.resumeToken(sequence: sequence), json: body)
    }
}

/// A single-document listener: `{"readTime","exists","document"}` per change of that document.
/// The frames and position of one stream, whether a task writes it (`run`) or its connection's
/// event loop does (`DocumentListenSource`).
struct DocumentListenStream: Sendable {
    let database: DocumentDatabase
    let path: ResourcePath
    let options: ListenOptions
    let ticker: KeepAliveTicker
    let frames: ListenFrameCache
    let resumeAfter: Int64?
    let resuming: Bool
    private var current: Document?
    private var sequence: Int64 = 0
    var access: ListenAccess?

    init(database: DocumentDatabase, path: ResourcePath, options: ListenOptions, ticker: KeepAliveTicker, frames: ListenFrameCache,
         resumeAfter: Int64?, resuming: Bool) {
        self.database = database
        self.path = path
        self.options = options
        self.ticker = ticker
        self.frames = frames
        self.resumeAfter = resumeAfter
        self.resuming = resuming
    }

    func run(_ writer: inout any ResponseBodyWriter) async {
        var stream = self
        let (subscription, first) = stream.open()
        do {
            if let first { try await writer.write(first) }
        } catch {
            subscription.cancel()
            return
        }
        await ListenLoop.run(subscription, ticker: ticker, writer: &writer, revoked: { stream.revocation() }) { event, writer in
            if let bytes = stream.frame(for: event) { try await writer.write(bytes) }
            return true
        }
    }

    /// After a rules change: the denial when the listener may no longer read the document.
    mutating func revocation() -> FiregateError? {
        let (database, path, current) = (database, path, current)
        return access?.revocation(database) { judge throws(FiregateError) in try judge.get([(path, current)], in: database) }
    }

    /// Subscribes to the feed; the first frame is the document now (none for a resumed stream
    /// whose document did not change since).
    mutating func open() -> (FeedSubscription, ByteBuffer?) {
        let start = database.listen(document: path, bufferLimit: options.bufferLimit, resumeAfter: resumeAfter)
        current = start.document
        sequence = start.sequence
        if start.resumedDocument.map({ $0 == current }) ?? false { return (start.subscription, nil) }
        return (start.subscription, frame(current, readTime: start.readTime, sequence: sequence, reset: resuming && start.resumedDocument == nil))
    }

    /// The frame a commit or an overflow sends, nil when it changes nothing here. `.closed`
    /// and `.heartbeat` are the loop's (see `ListenLoop`).
    mutating func frame(for event: FeedEvent) -> ByteBuffer? {
        switch event {
        case .commit(let record):
            guard record.sequence > sequence else { return nil }
            sequence = record.sequence
            guard let change = record.changes.first(where: { $0.path == path }) else { return nil }
            current = change.after
            return frames.frame("\(database.id.name)|\(path.canonical)|\(record.sequence)") {
                frame(change.after, readTime: record.commitTime, sequence: record.sequence, reset: false)
            }
        case .overflow:
            // Fell behind: start over from the current state.
            let fresh = database.listen(document: path, bufferLimit: 1, resumeAfter: nil)
            fresh.subscription.cancel()
            sequence = fresh.sequence
            current = fresh.document
            return frame(current, readTime: fresh.readTime, sequence: sequence, reset: true)
        case .closed, .heartbeat:
            return nil
        }
    }

    func frame(_ document: Document?, readTime: Timestamp, sequence: Int64, reset: Bool) -> ByteBuffer {
        var body: JSON = ["readTime": .string(readTime.rfc3339), "exists": .bool(document != nil)]
        if reset { body = body.withMember("reset", true) }
        if let document { body = body.withMember("document", document.json(database: database.id)) }
        return ServerSentEvents.frame(event: "snapshot", id: database.resumeToken(sequence: sequence), json: body)
    }
}
