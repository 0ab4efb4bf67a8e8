import FiregateModel

/// Who is the admin — the one place every surface asks (docs/security-rules.md, "Who is the
/// admin"). Without `--admin-token` it is the emulators' convention, the bearer token `owner`
/// (the Admin SDKs, rules-unit-testing's `withSecurityRulesDisabled`). With one, that token
/// alone: `owner` is then an ordinary unauthenticated caller, judged by the rules.
public struct AdminCredential: Sendable, Equatable {
    /// The emulators' admin token, valid while the server has no admin token of its own.
    public static let emulatorOwner = "owner"

    /// `--admin-token`, when set.
    public let token: String?

    public init(token: String?) {
        self.token = token
    }

    /// Whether `presented` (a bearer token, an RTDB socket credential, an edge client's token)
    /// is the admin's. Compared without stopping at the first difference when a secret is set.
    public func isAdmin(_ presented: String?) -> Bool {
        guard let presented else { return false }
        guard let token else { return presented == AdminCredential.emulatorOwner }
        return AdminCredential.equal(presented, token)
    }

    /// The bearer token that makes a request the admin's (a replica acting for the admin on
    /// another replica sends it).
    public var bearer: String { token ?? AdminCredential.emulatorOwner }

    /// Who a bare token names: the admin, a JWT's user (signature unchecked, as the emulators),
    /// else nobody.
    public func identity(ofToken token: String) -> CallIdentity {
        isAdmin(token) ? .admin : CallIdentity(userToken: token)
    }

    /// Who an `Authorization: Bearer …` header names (nobody without one).
    public func identity(authorization: String?) -> CallIdentity {
        guard let token = CallIdentity.bearerToken(authorization) else { return .unauthenticated }
        return identity(ofToken: token)
    }

    /// The bearer token naming `identity` to another replica of this server.
    public func bearerToken(for identity: CallIdentity) -> String? {
        identity == .admin ? bearer : identity.userBearerToken
    }

    static func equal(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = x.count ^ y.count
        for i in 0..<min(x.count, y.count) { difference |= Int(x[i] ^ y[i]) }
        return difference == 0
    }
}
