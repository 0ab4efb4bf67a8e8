import FiregateModel
import Foundation

/// Starting listeners: an atomic snapshot plus a feed subscription that continues it.
extension DocumentDatabase {
    /// A query listener's starting point. Feed commits with `sequence <= self.sequence` are
    /// already contained in `matches` and must be skipped.
    public struct QueryListenStart: Sendable {
        public let matches: QueryMatches
        public let sequence: Int64
        public let readTime: Timestamp
        public let subscription: FeedSubscription
        /// The result as of the resume point, when `resumeAfter` could be honoured.
        public let resumedWindow: [Document]?
    }

    /// Snapshots the query and subscribes, atomically. `resumeAfter` is a sequence from an
    /// earlier resume token; nil or too old gives no `resumedWindow`.
    public func listen(_ query: Query, bufferLimit: Int, resumeAfter: Int64?) -> QueryListenStart {
        state.withLock { state in
            let subscription = feed.subscribe(bufferLimit: bufferLimit)
            let matches = QueryMatches(query: query, database: id, candidates: state.candidates(for: query, at: nil))
            var resumed: [Document]?
            if let resumeAfter, let time = state.time(ofSequence: resumeAfter) {
                resumed = query.run(over: state.candidates(for: query, at: time), database: id).documents
            }
            return QueryListenStart(matches: matches, sequence: state.sequence, readTime: clock.now(),
                                    subscription: subscription, resumedWindow: resumed)
        }
    }

    /// The query's match set and the commit sequence it reflects, without a subscription (an
    /// edge client follows the feed through its own watch and applies later commits itself).
    public func matches(_ query: Query) -> (matches: QueryMatches, sequence: Int64) {
        state.withLock { state in
            (QueryMatches(query: query, database: id, candidates: state.candidates(for: query, at: nil)), state.sequence)
        }
    }

    /// A single-document listener's starting point.
    public struct DocumentListenStart: Sendable {
        public let document: Document?
        public let sequence: Int64
        public let readTime: Timestamp
        public let subscription: FeedSubscription
        /// The document as of the resume point (`.some(nil)`: it was missing then).
        public let resumedDocument: Document??
    }

    public func listen(document path: ResourcePath, bufferLimit: Int, resumeAfter: Int64?) -> DocumentListenStart {
        state.withLock { state in
            let subscription = feed.subscribe(bufferLimit: bufferLimit)
            var resumed: Document??
            if let resumeAfter, let time = state.time(ofSequence: resumeAfter) {
                resumed = .some(state.document(path, at: time))
            }
            return DocumentListenStart(document: state.documents[path]?.document, sequence: state.sequence, readTime: clock.now(),
                                       subscription: subscription, resumedDocument: resumed)
        }
    }

    /// Resume tokens are `<epoch>.<sequence>`. On a store of one process the epoch changes when
    /// the process restarts, so a token from an earlier run is never mistaken for a position in
    /// this one; on a shared store it is the database's generation and the sequence its log's,
    /// so a token resumes on every replica (docs/replicas.md).
    public func resumeToken(sequence: Int64) -> String { "\(epoch.withLock { $0 }).\(sequence)" }

    public func sequence(fromResumeToken token: String) -> Int64? {
        let parts = token.split(separator: ".")
        guard parts.count == 2, parts[0] == epoch.withLock({ $0 }), let n = Int64(parts[1]) else { return nil }
        return n
    }

    /// Waits, at most `timeout`, until the memory reflects `sequence` commits: a follower a
    /// little behind the replica that gave a resume token catches up before resuming it.
    public func awaitSequence(_ sequence: Int64, timeout: Duration) async {
        // A store of one process is never behind itself: a token from ahead is simply unknown.
        guard storage.position(id) != nil else { return }
        let deadline = ContinuousClock.now + timeout
        while currentSequence < sequence, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
    }
}

extension DatabaseState {
    /// The time at which the state had exactly `sequence` commits applied, if the history
    /// still reaches back that far.
    func time(ofSequence sequence: Int64) -> Timestamp? {
        if sequence == self.sequence { return Timestamp(microseconds: Int64.max / 2) }
        guard sequence < self.sequence, let first = history.first, sequence >= first.sequence - 1 else { return nil }
        if sequence == first.sequence - 1 { return Timestamp(microseconds: first.commitTime.microseconds - 1) }
        // The last commit at or before it (a follower's count may skip a commit that changed
        // nothing it holds).
        return history.last { $0.sequence <= sequence }?.commitTime
    }
}
