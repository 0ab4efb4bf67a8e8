import FiregateModel
import Foundation

/// Who a request speaks for, from its `authorization` header as the emulators read it
/// (DESIGN §1.5, §1.7): `Bearer owner` is the admin, a JWT is the user it names (its signature
/// and algorithm are not checked, as in the emulators), nothing is unauthenticated.
enum CallIdentity: Sendable, Equatable {
    case admin
    case user(uid: String, claims: JSON)
    case unauthenticated

    init(authorization: String?) {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else {
            self = .unauthenticated
            return
        }
        let token = authorization.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
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

    var uid: String? {
        if case .user(let uid, _) = self { return uid }
        return nil
    }

    /// The payload of a JWT (`header.payload.signature`, base64url), when it is a JSON object.
    static func claims(ofJWT token: String) -> JSON? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let bytes = Data(base64Encoded: base64), let json = try? JSONParser.parse([UInt8](bytes)), case .object = json else { return nil }
        return json
    }
}
