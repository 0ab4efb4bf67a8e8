import FiregateBackend

import FiregateModel
import Synchronization

/// The client's watch stream: a subscription to its database's change feed, consumed by a
/// task that hands each event to the client actor in order. Only commits that touch a
/// listened query's collection are handed over; the rest cost the client nothing.
struct WatchConnection {
    let subscription: FeedSubscription
    let task: Task<Void, Never>

    static func open(on database: DocumentDatabase, for client: EdgeClient, interest: WatchInterest) -> WatchConnection {
        let subscription = database.feed.subscribe(bufferLimit: 4096, interest: { interest.matches($0) })
        let task = Task {
            for await event in subscription {
                await client.onWatchEvent(event)
            }
        }
        return WatchConnection(subscription: subscription, task: task)
    }

    func close() {
        subscription.cancel()
        task.cancel()
    }
}

/// The queries a client's watch listens for, read by the feed at publish time.
final class WatchInterest: Sendable {
    private let queries = Mutex<[Query]>([])

    func set(_ current: [Query]) { queries.withLock { $0 = current } }

    func matches(_ record: CommitRecord) -> Bool {
        queries.withLock { queries in
            record.changes.contains { change in queries.contains { $0.containsPath(change.path) } }
        }
    }
}
