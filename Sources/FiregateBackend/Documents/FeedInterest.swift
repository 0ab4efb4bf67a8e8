import FiregateModel
import Synchronization

/// The queries a feed subscriber wants commits for. The feed indexes subscribers by the
/// collections (and collection groups) of their queries, so a commit reaches only the
/// subscribers of the collections it touches: with many edge clients each on their own
/// collections, publishing costs what the commit touches, not the number of clients.
///
/// One interest serves one subscription at a time (an edge client's watch, reopened on every
/// reconnect); `set` may be called at any time and takes effect for the next publish.
public final class FeedInterest: Sendable {
    /// Index keys: a collection's path, or a collection group's id (checked precisely after).
    enum Key: Hashable {
        case collection(ResourcePath)
        case group(String)
    }

    private struct State {
        var queries: [Query] = []
        var subscription: (feed: WeakFeed, id: Int)?
    }

    private struct WeakFeed {
        weak var feed: DocumentChangeFeed?
    }

    private let state = Mutex(State())

    public init() {}

    /// Replaces the queries; the feed's index follows before this returns.
    public func set(_ queries: [Query]) {
        state.withLock { state in
            state.queries = queries
            if let (link, id) = state.subscription { link.feed?.reindex(id, keys: Self.keys(queries)) }
        }
    }

    /// Whether a commit touches a document one of the queries covers.
    func matches(_ record: CommitRecord) -> Bool {
        state.withLock { state in
            record.changes.contains { change in state.queries.contains { $0.containsPath(change.path) } }
        }
    }

    /// Binds the interest to a new subscription: `register` (which takes the feed's lock)
    /// indexes it under the current keys and returns its id. Both locks are always taken in
    /// this order (interest, then feed), here and in `set`.
    func attach(to feed: DocumentChangeFeed, _ register: (Set<Key>) -> Int) {
        state.withLock { state in
            let id = register(Self.keys(state.queries))
            state.subscription = (WeakFeed(feed: feed), id)
        }
    }

    func detach(id: Int) {
        state.withLock { state in
            if state.subscription?.id == id { state.subscription = nil }
        }
    }

    static func keys(_ queries: [Query]) -> Set<Key> {
        Set(queries.map { $0.allDescendants ? .group($0.collectionID) : .collection($0.collectionPath) })
    }

    /// The keys under which subscribers of a changed document are found.
    static func keys(of path: ResourcePath) -> [Key] {
        let collection = path.parent
        return [.collection(collection), .group(collection.lastSegment)]
    }
}
