import FiregateModel

/// A bundle entering the local store (local_store_impl.ts: localStoreApplyBundledDocuments,
/// localStoreSaveNamedQuery, localStoreSaveBundle): its documents by the remote-document rule,
/// held by the bundle's umbrella target, and its named queries as targets that resume from the
/// bundle's read time.
extension LocalStore {
    /// The target that holds a bundle's documents (`__bundle__/docs/<id>`), so a collector does
    /// not take them while nothing listens.
    static func umbrellaQuery(_ bundleID: String) -> Query {
        Query(parent: ResourcePath(["__bundle__", "docs"]), collectionID: bundleID)
    }

    /// Applies the bundle's documents; returns those whose cached version changed.
    mutating func applyBundledDocuments(_ bundle: FirestoreBundle) -> Set<ResourcePath> {
        targetCache.beginOperation()
        let umbrella = LocalStore.umbrellaQuery(bundle.metadata.id).targetCanonicalID
        allocateBundleTarget(umbrella)
        var changed = Set<ResourcePath>()
        for bundled in bundle.documents {
            let update: RemoteDocument = bundled.document.map { .found($0, committed: false) } ?? .missing(version: bundled.readTime)
            if acceptRemote(bundled.path, update) { changed.insert(bundled.path) }
        }
        targetCache.applyServerResult(umbrella, documents: Set(bundle.documents.map(\.path)))
        for path in targetCache.targets[umbrella]?.documents ?? [] { persistSequence(path) }
        persistTarget(umbrella)
        return changed
    }

    /// Saves a named query. Its target is allocated now (it resumes from the bundle's read time
    /// when listened to); when the read time is newer than what the target has, the target takes
    /// it, with `documents` as its keys.
    mutating func saveNamedQuery(_ named: FirestoreBundle.NamedQuery, query: Query, documents: Set<ResourcePath>) {
        let queryID = query.targetCanonicalID
        allocateBundleTarget(queryID)
        if let target = targetCache.targets[queryID], target.snapshotVersion < named.readTime {
            targetCache.applyServerResult(queryID, documents: documents, synced: target.synced)
            targetCache.setResumeToken(queryID, "", version: named.readTime)
            persistTarget(queryID)
        }
        bundles.save(named)
    }

    /// localStoreSaveBundle: a bundle with this id and an older or equal create time is skipped
    /// from now on.
    mutating func noteBundleLoaded(_ metadata: FirestoreBundle.Metadata) {
        bundles.noteLoaded(metadata)
        persistBundles()
    }

    /// A target a bundle needs; one it allocates is held until a listener releases it.
    private mutating func allocateBundleTarget(_ queryID: String) {
        guard targetCache.targets[queryID] == nil else { return }
        targetCache.allocate(queryID)
        bundles.hold(queryID)
        persistTarget(queryID)
    }

    func persistBundles() {
        if persistent { storage?.saveBundles(bundles.json) }
    }
}
