import FiregateModel

/// All streams open on one location with the same query and format. A change is turned into
/// events and framed once here, then handed to every stream of the group.
final class TreeStreamGroup {
    let key: TreeStreamKey
    private(set) var subscriptions: [ObjectIdentifier: TreeStreamSubscription] = [:]
    /// For a filtering query, the window the streams were last told about.
    private var window: [TreeQueryEntry] = []
    /// The full `put` at `/` for the current value, built on demand and reset on change.
    private var snapshot: TreeStreamFrame?

    init(key: TreeStreamKey, root: TreeNode) {
        self.key = key
        if let query = key.query, case .children(let entries) = TreeQueryEvaluator.evaluate(query, on: root.node(at: key.path)) {
            window = entries
        }
    }

    var isEmpty: Bool { subscriptions.isEmpty }

    /// The current value as a stream sees it (the window for a filtering query).
    func currentValue(root: TreeNode) -> TreeQueryEvaluator.Result {
        let node = root.node(at: key.path)
        guard key.query != nil else { return .whole(node) }
        return .children(window)
    }

    func snapshotFrame(root: TreeNode) -> TreeStreamFrame {
        if let snapshot { return snapshot }
        let value = currentValue(root: root)
        var data: [UInt8] = Array(#"{"path":"/","data":"#.utf8)
        data.append(contentsOf: value.bytes(format: key.format, style: .compact))
        data.append(UInt8(ascii: "}"))
        let frame = TreeStreamFrame(kind: .put, data: data, update: .put(.root, value.node))
        snapshot = frame
        return frame
    }

    /// Starts `subscription` with the full current value; returns false (and cancels the
    /// stream) when that value is larger than a stream may carry.
    func add(_ subscription: TreeStreamSubscription, root: TreeNode, maxSnapshotBytes: Int) -> Bool {
        let frame = snapshotFrame(root: root)
        guard frame.bytes.count <= maxSnapshotBytes else {
            subscription.finish(after: .cancel("The data requested exceeds the maximum size that can be accessed with a single request."))
            return false
        }
        _ = subscription.offer(frame)
        subscriptions[ObjectIdentifier(subscription)] = subscription
        return true
    }

    func remove(_ subscription: TreeStreamSubscription) {
        subscriptions.removeValue(forKey: ObjectIdentifier(subscription))
    }

    /// The events of `change` for every stream of the group, to deliver once the change is
    /// durable. `before` is the location's value before the change.
    func apply(_ change: TreeChange, before: TreeNode, root: TreeNode) -> [(TreeStreamSubscription, [TreeStreamFrame])] {
        let updates: [TreeStreamUpdate]
        if let query = key.query {
            let current: [TreeQueryEntry]
            if case .children(let entries) = TreeQueryEvaluator.evaluate(query, on: root.node(at: key.path)) {
                current = entries
            } else {
                current = []
            }
            updates = TreeStreamEvents.windowUpdates(for: change, at: key.path, previous: window, current: current)
            window = current
        } else {
            updates = TreeStreamEvents.updates(for: change, at: key.path, before: before, after: root.node(at: key.path))
        }
        guard !updates.isEmpty else { return [] }
        snapshot = nil
        let frames = updates.map { TreeStreamFrame($0, format: key.format) }
        return subscriptions.values.map { ($0, frames) }
    }

    /// Replaces what `subscription` has queued with the current value (it fell behind).
    func resync(_ subscription: TreeStreamSubscription, root: TreeNode) {
        guard subscriptions[ObjectIdentifier(subscription)] != nil else { return }
        subscription.resync(with: snapshotFrame(root: root))
    }

    /// Ends every stream with `frame` (a `cancel`).
    func cancelAll(with frame: TreeStreamFrame) {
        for subscription in subscriptions.values { subscription.finish(after: frame) }
        subscriptions.removeAll()
    }
}
