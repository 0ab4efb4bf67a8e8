import FiregateModel

/// One open listener: its view, its raising rules and the stream it feeds.
struct ListenerEntry {
    let query: Query
    /// `query.targetCanonicalID` (a query and its mirror share a target), computed once.
    let queryID: String
    let options: ListenerOptions
    var view: QueryView
    var listener: QueryListener
    /// The documents the server last said are in this listener's target.
    var serverPaths: Set<ResourcePath> = []
    /// Whether the target has received its server result since the last (re)connect.
    var current = false
    /// The feed sequence the server result reflects; later commits are applied to it one by one
    /// (nil until the first server result, and again while the watch is down).
    var serverSequence: Int64?
    /// For a windowed query (limit or offset): the server's whole match set, so a document
    /// leaving the window lets the next one in. Unwindowed queries need only `serverPaths`.
    var matches: QueryMatches?
    /// Live watch: documents a bundle brought that the server has not yet been asked about
    /// (limbo until the next server result looks them up).
    var unresolved: Set<ResourcePath> = []
    let output: AsyncStream<EdgeEvent>.Continuation
}
