import FiregateModel

/// One open listener as the EventManager keeps it: which query's snapshots it takes, its
/// options, its raising rules (`QueryListener`) and the stream it feeds.
struct ListenerRegistration {
    let queryID: String
    let options: ListenerOptions
    var listener: QueryListener
    let output: AsyncStream<EdgeEvent>.Continuation
}
