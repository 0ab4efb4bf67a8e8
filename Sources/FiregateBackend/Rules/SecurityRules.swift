import FiregateModel
import FiregateRules
import Foundation
import Synchronization

/// The rulesets in force (docs/security-rules.md): Firestore rules per project, Realtime Database rules per
/// namespace. Startup rules (flags, firebase.json) apply wherever nothing was loaded over HTTP,
/// and `DELETE` goes back to them. Nothing loaded anywhere = everything allowed, as the emulators.
/// Loads replace a ruleset whole; a ruleset with errors changes nothing.
public final class SecurityRules: Sendable {
    /// A Firestore ruleset as loaded: its file, the compiled rules and the issues found.
    public final class FirestoreRelease: Sendable {
        public let fileName: String
        public let ruleset: FirestoreRuleset
        public let issues: [RulesIssue]
        public let loadedAt: Timestamp
        /// What its expressions evaluated to, since it was loaded.
        public let coverage = RulesCoverage()

        init(fileName: String, ruleset: FirestoreRuleset, issues: [RulesIssue], loadedAt: Timestamp) {
            (self.fileName, self.ruleset, self.issues, self.loadedAt) = (fileName, ruleset, issues, loadedAt)
        }
    }

    /// A Realtime Database ruleset as loaded.
    public final class RealtimeRelease: Sendable {
        public let ruleset: RealtimeRuleset
        public let loadedAt: Timestamp
        public let coverage = RealtimeRulesCoverage()
        /// Unindexed queries already warned about (location and order).
        let warned = Mutex<Set<String>>([])

        init(ruleset: RealtimeRuleset, loadedAt: Timestamp) {
            (self.ruleset, self.loadedAt) = (ruleset, loadedAt)
        }
    }

    struct State {
        var startupFirestore: FirestoreRelease?
        var startupRealtime: RealtimeRelease?
        var startupRealtimeByNamespace: [String: RealtimeRelease] = [:]
        var firestore: [String: FirestoreRelease] = [:]
        var realtime: [String: RealtimeRelease] = [:]
        /// Other names of namespaces (`TreeBackend.alias`): one namespace, one ruleset.
        var aliases: [String: String] = [:]
    }

    let state = Mutex(State())
    /// Whether any ruleset exists: the fast paths read this before anything else, so a server
    /// without rules pays one atomic load per request.
    let anyLoaded = Atomic<Bool>(false)
    private let changes = Atomic<UInt64>(0)
    public let decisions: RulesDecisionLog
    let clock: ServerClock
    private let observers = Mutex<[@Sendable (RulesChange) -> Void]>([])
    private let adminCredential = Mutex(AdminCredential(token: nil))
    private let tokens = Mutex<[String: (CallIdentity, auth: RulesValue)]>([:])

    public init(clock: ServerClock) {
        self.clock = clock
        decisions = RulesDecisionLog(clock: clock)
    }

    /// The server's time, as decisions see it.
    public var now: Timestamp { clock.now() }

    /// Whether any ruleset is loaded (for any project or namespace).
    public var isActive: Bool { anyLoaded.load(ordering: .relaxed) }

    /// Counts the changes of rules: what was judged under an older count is judged again
    /// (open listens and streams lose what they may no longer read).
    public var generation: UInt64 { changes.load(ordering: .acquiring) }

    public func firestore(project: String) -> FirestoreRelease? {
        state.withLock { $0.firestore[project] ?? $0.startupFirestore }
    }

    /// Makes `alias` another name of `canonical`, as `TreeBackend.alias` does for the data.
    public func alias(_ alias: String, to canonical: String) {
        state.withLock { $0.aliases[alias] = canonical }
    }

    private func canonical(_ namespace: String) -> String {
        state.withLock { $0.aliases[namespace] } ?? namespace
    }

    public func realtime(namespace requested: String) -> RealtimeRelease? {
        state.withLock { state in
            let namespace = state.aliases[requested] ?? requested
            return state.realtime[namespace] ?? state.startupRealtimeByNamespace[namespace] ?? state.startupRealtime
        }
    }

    // MARK: Loading

    /// Compiles `source` and, when it has no error, makes it the project's rules. The issues
    /// (warnings too) come back either way.
    @discardableResult
    public func loadFirestore(project: String?, fileName: String, source: String) -> (applied: Bool, issues: [RulesIssue]) {
        let (ruleset, issues) = FirestoreRulesLoader.load(source)
        guard let ruleset else { return (false, issues) }
        let release = FirestoreRelease(fileName: fileName, ruleset: ruleset, issues: issues, loadedAt: clock.now())
        state.withLock { state in
            if let project { state.firestore[project] = release } else { state.startupFirestore = release }
        }
        changed(.firestore(project: project))
        return (true, issues)
    }

    /// Parses `source` (JSON with comments) and makes it the namespace's rules (nil: the startup
    /// rules of every namespace); a parse error throws and changes nothing.
    public func loadRealtime(namespace requested: String?, source: String, startup: Bool = false) throws(RulesIssue) {
        let namespace = requested.map(canonical)
        let release = RealtimeRelease(ruleset: try RealtimeRuleset.parse(source), loadedAt: clock.now())
        state.withLock { state in
            switch (namespace, startup) {
            case (nil, _): state.startupRealtime = release
            case (let namespace?, true): state.startupRealtimeByNamespace[namespace] = release
            case (let namespace?, false): state.realtime[namespace] = release
            }
        }
        changed(.realtime(namespace: namespace))
    }

    /// Back to the startup rules (or none) for the project.
    public func resetFirestore(project: String) {
        state.withLock { _ = $0.firestore.removeValue(forKey: project) }
        changed(.firestore(project: project))
    }

    public func resetRealtime(namespace requested: String) {
        let namespace = canonical(requested)
        state.withLock { _ = $0.realtime.removeValue(forKey: namespace) }
        changed(.realtime(namespace: namespace))
    }

    /// Called after every change of rules (streams re-judge what they serve).
    public func onChange(_ observer: @escaping @Sendable (RulesChange) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    private func changed(_ change: RulesChange) {
        let any = state.withLock { state in
            state.startupFirestore != nil || state.startupRealtime != nil || !state.startupRealtimeByNamespace.isEmpty
                || !state.firestore.isEmpty || !state.realtime.isEmpty
        }
        anyLoaded.store(any, ordering: .relaxed)
        changes.add(1, ordering: .releasing)
        for observer in observers.withLock({ $0 }) { observer(change) }
    }
}

/// Which rules changed: a project's (nil: the startup rules, so every project), or a namespace's.
public enum RulesChange: Sendable, Equatable {
    case firestore(project: String?)
    case realtime(namespace: String?)
}

extension SecurityRules {
    /// Who is the admin on this server (`--admin-token`, else the emulators' `owner`).
    public var admin: AdminCredential { adminCredential.withLock { $0 } }

    /// `--admin-token`: the token alone is then the admin, on every surface.
    public func trust(adminToken token: String?) {
        adminCredential.withLock { $0 = AdminCredential(token: token) }
        tokens.withLock { $0.removeAll() }
    }

    /// Who a bearer token names: the admin's credential is the admin (`AdminCredential`); a JWT
    /// is taken at face value (signature, `alg` and `exp` unchecked, as the emulators do);
    /// no token is unauthenticated; anything else is refused (401) — but only where rules
    /// judge, so a server without rules accepts every token as before. `owner` on a server with
    /// an admin token is an ordinary unauthenticated caller, never refused for its shape.
    public func caller(token: String?, judged: Bool, surface: String, client: String? = nil) throws(FiregateError) -> RulesCaller {
        guard let token, !token.isEmpty else { return RulesCaller(identity: .unauthenticated, surface: surface, client: client) }
        let (identity, auth) = identity(ofToken: token)
        if judged, identity == .unauthenticated, token != AdminCredential.emulatorOwner {
            throw FiregateError(.unauthenticated, "The bearer token is neither the admin's nor a JWT (header.payload.signature, base64url) naming a user (sub or user_id).")
        }
        return RulesCaller(identity: identity, surface: surface, client: client, auth: auth)
    }

    /// A token's identity; the recent ones are kept, since a test's client sends the same
    /// token with every request and decoding it costs more than judging.
    func identity(ofToken token: String) -> (CallIdentity, auth: RulesValue) {
        if let known = tokens.withLock({ $0[token] }) { return known }
        let identity = admin.identity(ofToken: token)
        let known = (identity, RulesCaller.auth(of: identity))
        tokens.withLock { tokens in
            if tokens.count >= 256 { tokens.removeAll(keepingCapacity: true) }
            tokens[token] = known
        }
        return known
    }
}
