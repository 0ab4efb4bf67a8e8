import FiregateModel

/// Limbo resolution as the SDK's sync engine does it (core/sync_engine_impl.ts): a document a
/// current view shows but its target's server result does not hold is in limbo; each such
/// document gets a lookup target of its own (odd ids 1, 3, 5…, from a generator that starts
/// over with every instance), at most `maxConcurrent` at a time, the rest queued in order.
struct LimboResolutions {
    struct Resolution {
        let path: ResourcePath
        /// Whether the lookup target has delivered the document (then it holds it).
        var receivedDocument = false
    }

    let maxConcurrent: Int
    /// Which query targets hold each document in limbo (limboDocumentRefs).
    private var references: [ResourcePath: Set<Int>] = [:]
    private(set) var enqueued: [ResourcePath] = []
    private(set) var activeByPath: [ResourcePath: Int] = [:]
    private(set) var activeByTarget: [Int: Resolution] = [:]
    /// The next lookup's target id; each tab of a shared persistence has its own generator.
    private(set) var nextTargetID: Int

    init(maxConcurrent: Int, nextTargetID: Int = 1) {
        self.maxConcurrent = maxConcurrent
        self.nextTargetID = nextTargetID
    }

    /// Lookups to start and to stop.
    struct Actions {
        var listen: [(targetID: Int, path: ResourcePath)] = []
        var unlisten: [Int] = []
    }

    /// A view of query target `targetID` now has `limbo` in limbo (all of them, not a diff).
    mutating func update(targetID: Int, limbo: Set<ResourcePath>) -> Actions {
        var actions = Actions()
        let before = Set(references.compactMap { $0.value.contains(targetID) ? $0.key : nil })
        for path in limbo.subtracting(before).sorted() {
            references[path, default: []].insert(targetID)
            if activeByPath[path] == nil, !enqueued.contains(path) { enqueued.append(path) }
        }
        for path in before.subtracting(limbo).sorted() {
            release(path, from: targetID, into: &actions)
        }
        pump(into: &actions)
        return actions
    }

    /// The query target went away: its limbo documents are no longer referenced by it.
    mutating func removeTarget(_ targetID: Int) -> Actions {
        var actions = Actions()
        for (path, holders) in references where holders.contains(targetID) { release(path, from: targetID, into: &actions) }
        pump(into: &actions)
        return actions
    }

    private mutating func release(_ path: ResourcePath, from targetID: Int, into actions: inout Actions) {
        references[path]?.remove(targetID)
        guard references[path]?.isEmpty ?? true else { return }
        references[path] = nil
        enqueued.removeAll { $0 == path }
        if let lookup = activeByPath.removeValue(forKey: path) {
            activeByTarget[lookup] = nil
            actions.unlisten.append(lookup)
        }
    }

    /// Watch refused a lookup: it ends, and the next queued one may start.
    mutating func rejected(_ targetID: Int) -> (path: ResourcePath, actions: Actions)? {
        guard let resolution = activeByTarget.removeValue(forKey: targetID) else { return nil }
        activeByPath[resolution.path] = nil
        var actions = Actions()
        pump(into: &actions)
        return (resolution.path, actions)
    }

    /// Records what a snapshot said of a lookup target (its one document, or that it left).
    mutating func noteChange(_ targetID: Int, _ change: TargetChange) {
        guard activeByTarget[targetID] != nil else { return }
        if !change.added.isEmpty {
            activeByTarget[targetID]?.receivedDocument = true
        } else if !change.removed.isEmpty {
            activeByTarget[targetID]?.receivedDocument = false
        }
    }

    /// The keys a lookup target holds: its document once received.
    func remoteKeys(_ targetID: Int) -> Set<ResourcePath>? {
        guard let resolution = activeByTarget[targetID] else { return nil }
        return resolution.receivedDocument ? [resolution.path] : []
    }

    func isLookup(_ targetID: Int) -> Bool { activeByTarget[targetID] != nil }

    private mutating func pump(into actions: inout Actions) {
        while !enqueued.isEmpty, activeByTarget.count < maxConcurrent {
            let path = enqueued.removeFirst()
            let id = nextTargetID
            nextTargetID += 2
            activeByPath[path] = id
            activeByTarget[id] = Resolution(path: path)
            actions.listen.append((id, path))
        }
    }
}
