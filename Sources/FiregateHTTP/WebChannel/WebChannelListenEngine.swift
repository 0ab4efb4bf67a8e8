import FiregateBackend
import FiregateModel
import FiregateProto
import FiregateWebChannel
import Synchronization

/// The Listen stream of one WebChannel session, with no task of its own: the forward POSTs hand
/// it the client's requests and the back channel that reads the session has it take the
/// database's commits (`pump`) before each look — on its connection's event loop when it
/// streams there. So a commit reaches a page's socket without a task switch, as an SSE listen's
/// does (docs/webchannel.md, "Fan-out"). `ListenTargets` turns both into the responses gRPC's
/// Listen sends, so targets, resume tokens, rules and errors are the same.
///
/// While the client leaves more than the session's limit unacknowledged, commits stay in the
/// feed subscription; one that falls `bufferLimit` commits behind is resynchronised, as any
/// listener is.
final class WebChannelListenEngine: Sendable {
    private struct State {
        var targets: ListenTargets
        var ended = false
    }

    let session: WebChannelSession
    private let subscription: FeedSubscription
    private let texts: WebChannelTextCache
    private let fanOut: WebChannelFanOut
    private let counted: ListenCount
    /// Ends the stream with a status (nil: the client's terminate); called once.
    private let finish: @Sendable (FiregateError?) -> Void
    private let state: Mutex<State>
    /// The feed's wake-up: the session's current back channel.
    private let ring: @Sendable () -> Void

    init(session: WebChannelSession, database: DocumentDatabase, backend: Backend, bufferLimit: Int, caller: RulesCaller?,
         timeline: TimelineRecorder?, counted: ListenCount, texts: WebChannelTextCache, fanOut: WebChannelFanOut,
         finish: @escaping @Sendable (FiregateError?) -> Void) {
        self.session = session
        self.texts = texts
        self.fanOut = fanOut
        self.counted = counted
        self.finish = finish
        ring = { [session] in session.ring() }
        subscription = database.feed.subscribe(bufferLimit: bufferLimit)
        var targets = ListenTargets(database: database, startingAfter: subscription.startsAfter)
        targets.access = caller.map { ListenAccess(rules: backend.rules, caller: $0) }
        targets.timeline = timeline.map(ListenTimeline.init)
        state = Mutex(State(targets: targets))
    }

    /// Answers the client's requests, in order; the first bad one ends the stream with its error.
    /// The answers are queued before the lock is let go, so no commit's answer overtakes them.
    func handle(_ requests: [Google_Firestore_V1_ListenRequest]) {
        let outcome = state.withLock { state -> (count: Int, error: FiregateError?)? in
            guard !state.ended else { return nil }
            var out: [WebChannelMessage] = []
            var failure: FiregateError?
            do {
                for request in requests {
                    for response in try state.targets.handle(request) { out.append(try texts.text(response)) }
                }
            } catch {
                failure = ErrorResponse.normalize(error)
            }
            session.queue(out)
            return (state.targets.count, failure)
        }
        guard let outcome else { return }
        counted.set(outcome.count)
        if let error = outcome.error { end(error) }
    }

    /// Takes the commits waiting in the feed into the session while the client has room; when
    /// more arrive, the feed rings the session's back channel — the one reading then, not the
    /// one that pumped (it may be superseded meanwhile). `reader`, the back channel about to
    /// look, is not rung for what it takes in itself.
    func pump(for reader: WebChannelBackChannel? = nil) {
        var ending: FiregateError?
        state.withLock { state in
            guard !state.ended else { return }
            while session.hasRoom {
                let (event, finished) = subscription.poll(orWake: ring)
                guard let event else {
                    if finished { ending = .cancelled("The stream was cancelled.") }
                    return
                }
                do {
                    let messages: [WebChannelMessage]
                    switch event {
                    case .commit(let record): messages = try answer(record, &state.targets)
                    case .overflow: messages = try state.targets.resynchronise().map { try texts.text($0) }
                    // The rules changed: the targets are judged again.
                    case .heartbeat: messages = try state.targets.revocations().map { try texts.text($0) }
                    case .closed(let error):
                        ending = FiregateError(.unavailable, error.message)
                        return
                    }
                    session.queue(messages, sparing: reader)
                } catch {
                    ending = ErrorResponse.normalize(error)
                    return
                }
            }
        }
        if let ending { end(ending) }
    }

    /// A commit's messages: taken from the session of the same shape that the commit reached
    /// first, when there is one (the targets still move on and the timeline still hears them).
    private func answer(_ record: CommitRecord, _ targets: inout ListenTargets) throws -> [WebChannelMessage] {
        guard let shape = targets.shape(for: record) else {
            return try targets.apply(record).map { try text($0, committed: record, targets: targets) }
        }
        let key = WebChannelFanOut.Key(sequence: record.sequence, commitTime: record.commitTime, shape: shape)
        if let (shared, stored) = fanOut.answer(key) {
            targets.apply(record, sharing: shared.steps)
            targets.adopt(stored)
            return shared.texts
        }
        let responses = targets.apply(record)
        let messages = try responses.map { try text($0, committed: record, targets: targets) }
        fanOut.store(key, .init(steps: ListenTimeline.Steps(responses), texts: messages))
        return messages
    }

    /// A response's text; a whole document's change from `record` is found by
    /// what determines it (the document's version at that commit, the target id) instead of by
    /// its encoding, which costs a fan-out more than the rest of its step.
    private func text(_ response: ListenResponse, committed record: CommitRecord, targets: ListenTargets) throws -> WebChannelMessage {
        if case .documentChange(let change)? = response.responseType, change.targetIds.count == 1, change.removedTargetIds.isEmpty,
           targets.sendsWholeDocuments(change.targetIds[0]) {
            return try texts.text(response, key: .init(database: targets.database.id, sequence: record.sequence, commitTime: record.commitTime,
                                                       name: change.document.name, target: change.targetIds[0]))
        }
        return try texts.text(response)
    }

    /// Ends the stream: nil for the client's terminate, else the status the client is told.
    /// Its subscription is released at once.
    func end(_ status: FiregateError?) {
        let first = state.withLock { state -> Bool in
            defer { state.ended = true }
            return !state.ended
        }
        guard first else { return }
        subscription.cancel()
        counted.set(0)
        finish(status)
    }
}
