import FiregateModel
import Logging
import OrderedCollections
import FiregateRules
import Synchronization

/// Judges one caller's tree reads and writes against its namespace's rules (docs/wire/
/// security-rules.md: Cascading to Writes), records each decision and keeps their ids. Made by
/// `SecurityRules.treeJudge`, which gives none when nothing is judged.
public final class TreeRulesJudge: TreeWriteJudge, Sendable {
    let release: SecurityRules.RealtimeRelease
    let namespace: String
    let caller: RulesCaller
    let log: RulesDecisionLog
    let clock: ServerClock
    private let ids = Mutex<[String]>([])

    init(release: SecurityRules.RealtimeRelease, namespace: String, caller: RulesCaller, log: RulesDecisionLog, clock: ServerClock) {
        self.release = release
        self.namespace = namespace
        self.caller = caller
        self.log = log
        self.clock = clock
    }

    public var decisionIDs: [String] { ids.withLock { $0 } }

    /// Whether a read at `path` (with `query`, if any) is allowed; records the decision.
    public func allowsRead(_ path: TreePath, query: TreeQuery?, root: TreeNode) -> Bool {
        let context = RealtimeRulesContext(data: TreeRulesData(before: root, after: root), claims: caller.claims,
                                           nowMillis: Double(clock.nowMicros() / 1000), query: TreeRulesJudge.queryFields(query))
        let decision = release.ruleset.read(path.keys, context)
        warnIfUnindexed(path, query)
        return finish([.init(method: "read", path: path.description, decision)])
    }

    /// A read, or PERMISSION_DENIED (the tree's 401 `Permission denied`).
    public func read(_ path: TreePath, query: TreeQuery?, root: TreeNode) throws(FiregateError) {
        guard allowsRead(path, query: query, root: root) else { throw TreeRulesJudge.denied }
    }

    /// A write of each of `paths` (one for a set or push, one per key of an update), all
    /// against the tree as the whole write leaves it; all must pass (B7).
    public func judge(_ paths: [TreePath], before: TreeNode, after: TreeNode) throws(FiregateError) {
        let context = RealtimeRulesContext(data: TreeRulesData(before: before, after: after), claims: caller.claims,
                                           nowMillis: Double(clock.nowMicros() / 1000))
        let evaluations = paths.map { path in
            RulesDecisionRecord.Evaluation(method: "write", path: path.description, release.ruleset.write(path.keys, context))
        }
        guard finish(evaluations) else { throw TreeRulesJudge.denied }
    }

    /// A query ordered by a child (or by value) that `.indexOn` does not name works, as in the
    /// emulator, and is logged with the SDK's warning, once per location and order.
    private func warnIfUnindexed(_ path: TreePath, _ query: TreeQuery?) {
        let orderBy = TreeRulesJudge.indexName(query)
        guard let warning = release.ruleset.missingIndexWarning(at: path.keys, orderBy: orderBy),
              release.warned.withLock({ $0.insert(path.description + "|" + (orderBy ?? "")).inserted }) else { return }
        TreeRulesJudge.logger.warning("\(warning)", metadata: ["namespace": .string(namespace)])
    }

    static let logger = Logger(label: "firegate.rules")

    /// What `.indexOn` names for a query's order: the child, `.value`, or nil (key, priority).
    static func indexName(_ query: TreeQuery?) -> String? {
        switch query?.index {
        case .child(let child)?: child.joined
        case .value?: ".value"
        default: nil
        }
    }

    /// RTDB's denial: REST answers 401 `{"error":"Permission denied"}` (B8).
    public static let denied = FiregateError(.permissionDenied, "Permission denied", httpStatus: 401)

    private func finish(_ evaluations: [RulesDecisionRecord.Evaluation]) -> Bool {
        for evaluation in evaluations {
            if case .realtime(let decision) = evaluation.detail { release.coverage.record(decision, ruleset: release.ruleset) }
        }
        let record = log.record(service: .database, scope: namespace, caller: caller, message: "Permission denied",
                                evaluations: evaluations, source: release.ruleset.source)
        ids.withLock { $0.append(record.id) }
        return record.outcome == .allow
    }

    /// A query as `query.*` sees it (B6): the order, the range ends and the limits.
    static func queryFields(_ query: TreeQuery?) -> [String: JSON] {
        guard let query else { return [:] }
        var fields: [String: JSON] = [:]
        switch query.index {
        case .key: fields["orderByKey"] = .bool(true)
        case .value: fields["orderByValue"] = .bool(true)
        case .priority: fields["orderByPriority"] = .bool(true)
        case .child(let path): fields["orderByChild"] = .string(path.joined)
        }
        let start = query.start.map { $0.value?.json ?? .null }, end = query.end.map { $0.value?.json ?? .null }
        if let start, let end, start == end, query.start?.inclusive == true, query.end?.inclusive == true {
            fields["equalTo"] = start
        } else {
            if let start { fields["startAt"] = start }
            if let end { fields["endAt"] = end }
        }
        switch query.limit {
        case .first(let n): fields["limitToFirst"] = .int(Int64(n))
        case .last(let n): fields["limitToLast"] = .int(Int64(n))
        case nil: break
        }
        return fields
    }
}

/// The namespace's check of a write, called inside the namespace before anything changes.
public protocol TreeWriteJudge: Sendable {
    func judge(_ paths: [TreePath], before: TreeNode, after: TreeNode) throws(FiregateError)
}

/// The tree before and after a write, in export form (`.priority` kept), as rules read it.
struct TreeRulesData: RealtimeRulesData {
    let before: TreeNode
    let after: TreeNode

    func value(at path: [String], after isAfter: Bool) -> JSON? {
        let node = (isAfter ? after : before).node(at: TreePath(keys: path))
        return node.isEmpty ? nil : TreeRulesData.exportForm(node)
    }

    static func exportForm(_ node: TreeNode) -> JSON {
        let priority = node.priorityNode.leaf?.json
        switch node.content {
        case .empty: return .null
        case .leaf(let leaf):
            guard let priority else { return leaf.json }
            return [".value": leaf.json, ".priority": priority]
        case .children(let kids):
            var members = OrderedDictionary<String, JSON>()
            members.reserveCapacity(kids.count + 1)
            for (key, child) in kids { members[key] = exportForm(child) }
            if let priority { members[".priority"] = priority }
            return .object(members)
        }
    }
}

extension SecurityRules {
    /// Whether `query` at `path` orders by a child (or by value) that the namespace's rules do
    /// not index: the socket answers its listen with production's `no_index` warning.
    public func isUnindexed(_ query: TreeQuery, at path: TreePath, namespace: String) -> Bool {
        guard let release = realtime(namespace: namespace) else { return false }
        return release.ruleset.missingIndexWarning(at: path.keys, orderBy: TreeRulesJudge.indexName(query)) != nil
    }

    /// The judge of `caller`'s requests to `namespace`, or nil when they are not judged.
    public func treeJudge(_ namespace: String, caller: RulesCaller) -> TreeRulesJudge? {
        guard isActive, caller.identity != .admin, let release = realtime(namespace: namespace) else { return nil }
        return TreeRulesJudge(release: release, namespace: namespace, caller: caller, log: decisions, clock: clock)
    }
}
