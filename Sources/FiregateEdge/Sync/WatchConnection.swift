import FiregateBackend

import FiregateModel

/// The client's watch stream: a subscription to its database's change feed, consumed by a
/// task that hands each event to the client actor in order. Only commits that touch a
/// listened query's collection are handed over; the rest cost the client nothing.
struct WatchConnection {
    let subscription: FeedSubscription
    let task: Task<Void, Never>
    /// The rules generation the listens were last judged under.
    var rulesGeneration: UInt64 = 0

    static func open(on database: DocumentDatabase, for client: EdgeClient, interest: FeedInterest) -> WatchConnection {
        let subscription = database.feed.subscribe(bufferLimit: 4096, interest: interest)
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
