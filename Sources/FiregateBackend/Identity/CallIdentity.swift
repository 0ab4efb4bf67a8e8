import FiregateModel
import Foundation

/// Who a request or connection speaks for, as the emulators read it: the admin (whose
/// credential `AdminCredential` decides), a JWT's user (its signature and algorithm are not
/// checked, as in the emulators), or nobody. Security rules judge by it.
public enum CallIdentity: Sendable, Equatable {
    case admin
    case user(uid: String, claims: JSON)
    case unauthenticated

    /// The user a token names when it is a JWT with `sub` or `user_id`; else nobody. Never the
    /// admin: that is for `AdminCredential.identity(ofToken:)` to say.
    public init(userToken token: String) {
        guard let claims = CallIdentity.claims(ofJWT: token),
              let uid = claims.member("user_id")?.stringValue ?? claims.member("sub")?.stringValue, !uid.isEmpty
        else {
            self = .unauthenticated
            return
        }
        self = .user(uid: uid, claims: claims)
    }

    public var uid: String? {
        if case .user(let uid, _) = self { return uid }
        return nil
    }

    /// An unsigned JWT of a user's claims, for a request one replica makes for a caller on
    /// another (the emulator reads JWTs without checking signatures, as the official emulators
    /// do); nil for anyone else.
    var userBearerToken: String? {
        guard case .user(_, let claims) = self else { return nil }
        func part(_ json: JSON) -> String {
            Data(JSONWriter.bytes(json)).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return part(["alg": "none", "typ": "JWT"]) + "." + part(claims) + "."
    }

    /// The token of an `Authorization: Bearer …` header ("Bearer" in any case).
    public static func bearerToken(_ authorization: String?) -> String? {
        guard let authorization else { return nil }
        // "Bearer " in any case, compared without lowercasing the whole header.
        let scheme = authorization.utf8.prefix(7)
        guard scheme.count == 7, zip(scheme, "bearer ".utf8).allSatisfy({ $0 | 0x20 == $1 }) else { return nil }
        var token = authorization.utf8.dropFirst(7)
        while token.first == UInt8(ascii: " ") { token = token.dropFirst() }
        while token.last == UInt8(ascii: " ") { token = token.dropLast() }
        return String(Substring(token))
    }

    /// The payload of a JWT (`header.payload.signature`, base64url), when it is a JSON object.
    public static func claims(ofJWT token: String) -> JSON? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let bytes = Data(base64Encoded: base64), let json = try? JSONParser.parse([UInt8](bytes)), case .object = json else { return nil }
        return json
    }
}
