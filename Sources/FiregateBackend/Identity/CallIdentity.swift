import FiregateModel
import Foundation

/// Who a request or connection speaks for, as the emulators read it (DESIGN §1.5–1.7):
/// `owner` is the admin, a JWT is the user it names (its signature and algorithm are not
/// checked, as in the emulators), nothing is unauthenticated. Security rules judge by it.
public enum CallIdentity: Sendable, Equatable {
    case admin
    case user(uid: String, claims: JSON)
    case unauthenticated

    public init(authorization: String?) {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else {
            self = .unauthenticated
            return
        }
        self.init(token: authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces))
    }

    /// The identity of a bare token: `owner`, or a JWT naming a user (else unauthenticated).
    public init(token: String) {
        if token == "owner" {
            self = .admin
            return
        }
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

    /// A bearer token naming this identity, for a request one replica makes for a caller on
    /// another: `owner` for the admin, an unsigned JWT of the user's claims (the emulator reads
    /// JWTs without checking signatures, as the official emulators do), nil for nobody.
    public var bearerToken: String? {
        switch self {
        case .admin: return "owner"
        case .unauthenticated: return nil
        case .user(_, let claims):
            func part(_ json: JSON) -> String {
                Data(JSONWriter.bytes(json)).base64EncodedString()
                    .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
            return part(["alg": "none", "typ": "JWT"]) + "." + part(claims) + "."
        }
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
