import FiregateBackend
import FiregateModel

/// The signed-in user of a client (`PUT /clients/{id}/auth`): uid, token, custom claims
/// (merged into the token the rules see) and when the token expires; the admin's credential
/// (`owner`, or the server's admin token when it has one) makes the client the admin, whom
/// rules do not judge. Kept across restarts with persistence (FirebaseAuth keeps the user on disk). A
/// token past its expiry cannot be refreshed by the emulated app, so writes wait for a new one.
public struct ClientAuth: Sendable, Equatable {
    public var uid: String?
    public var token: String?
    /// Epoch milliseconds on the client's clock; nil never expires.
    public var expiresAt: Int64?
    /// Custom claims (`{"role":"admin"}`), an object.
    public var claims: JSON?

    public init(uid: String?, token: String?, expiresAt: Int64?, claims: JSON? = nil) {
        self.uid = uid
        self.token = token
        self.expiresAt = expiresAt
        self.claims = claims
    }

    /// Parses a PUT body; `{}` or `{"uid":null}` signs out.
    public static func parse(_ json: JSON) throws(FiregateError) -> ClientAuth? {
        guard case .object(let members) = json else { throw .invalidArgument("Auth must be a JSON object.") }
        if let unknown = members.keys.first(where: { !["uid", "token", "expiresAt", "claims"].contains($0) }) {
            throw .invalidArgument("Unknown auth field \"\(unknown)\".")
        }
        var auth = ClientAuth(uid: nil, token: nil, expiresAt: nil)
        if let uid = json["uid"], uid != .null {
            guard let text = uid.stringValue, !text.isEmpty, text.utf8.count <= 128 else { throw .invalidArgument("uid must be a string of 1 to 128 bytes.") }
            auth.uid = text
        }
        if let token = json["token"], token != .null {
            guard let text = token.stringValue else { throw .invalidArgument("token must be a string.") }
            auth.token = text
        }
        if let expiry = json["expiresAt"], expiry != .null {
            guard let ms = expiry.integerLike, ms >= 0 else { throw .invalidArgument("expiresAt must be epoch milliseconds (an integer ≥ 0).") }
            auth.expiresAt = ms
        }
        if let claims = json["claims"], claims != .null {
            guard case .object = claims else { throw .invalidArgument("claims must be a JSON object.") }
            auth.claims = claims
        }
        // A token alone is an admin credential (`owner`, or the server's admin token: the
        // server decides whether it is the admin); a user's token comes with the user's uid.
        guard auth.uid != nil || auth.token.map({ CallIdentity(userToken: $0) == .unauthenticated }) == true else {
            guard auth.token == nil, auth.expiresAt == nil, auth.claims == nil else {
                throw .invalidArgument("A token naming a user needs the user's uid (a token alone is the admin's credential).")
            }
            return nil
        }
        return auth
    }

    init?(json: JSON) {
        guard let parsed = try? ClientAuth.parse(json) else { return nil }
        self = parsed
    }

    public var json: JSON {
        var json: JSON = ["uid": uid.map(JSON.string) ?? .null]
        if let token { json = json.withMember("token", .string(token)) }
        if let expiresAt { json = json.withMember("expiresAt", .int(expiresAt)) }
        if let claims { json = json.withMember("claims", claims) }
        return json
    }

    func isExpired(nowMillis: Int64) -> Bool { expiresAt.map { $0 <= nowMillis } ?? false }
}
