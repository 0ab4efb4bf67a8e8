import FiregateBackend
import FiregateModel
import FiregateStore

/// The client's local persistence, as the SDK's LocalStore holds it: the remote document cache
/// (with its local indexes), the mutation queues, the target cache, the injected storage faults
/// and the garbage collector's record, and the storage that keeps them for a persistent client.
/// Owned by the `EdgeClient` actor, which changes it only through this value.
struct LocalStore {
    /// Where a persistent client saves; nil keeps everything in memory.
    let storage: EdgeCacheStorage?
    /// The settings' persistence: a memory client's cache is its own persistence.
    var persistent: Bool
    /// The server's clock: the version of a document the watch says is missing.
    let clock: ServerClock
    var remoteDocuments = RemoteDocumentCache()
    /// Reads answered from the cache and documents dropped from it, for metrics.
    var cacheStatistics = CacheStatistics()
    /// The signed-in user's mutation queue.
    var mutationQueue = MutationQueue()
    /// Other users' queues, kept until that user signs in again (the SDK's per-user queues).
    var queuesByUser: [String: MutationQueue] = [:]
    /// Every query listened to, its server result's keys, and LRU sequence numbers.
    var targetCache = TargetCache()
    /// Loaded bundles and their named queries.
    var bundles = BundleCache()
    var gcRuns = 0
    var lastGC: JSON = .null
    /// The SDK's indexAutoCreationEnabled: in memory only, off at every start.
    var indexAutoCreation = false
    /// Injected persistence failures (the spec tests' `failDatabase`).
    var faults = StorageFaults()

    init(storage: EdgeCacheStorage?, persistent: Bool, clock: ServerClock) {
        self.storage = storage
        self.persistent = persistent
        self.clock = clock
    }

    /// Forgets what is held in memory: every user's queue, the documents and their indexes, the
    /// targets, the bundles (a memory client's restart, clearPersistence). Storage is untouched.
    mutating func forgetCache() {
        mutationQueue.removeAll()
        queuesByUser.removeAll()
        remoteDocuments.removeAll()
        remoteDocuments.indexes.removeAll()
        targetCache.removeAll()
        bundles = BundleCache()
    }
}
