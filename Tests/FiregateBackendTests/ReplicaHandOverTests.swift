@testable import FiregateBackend
import FiregateModel
import XCTest

/// What one replica hands another: onDisconnect operations kept as JSON, and a caller's
/// identity as a bearer token the owner reads back as the same identity.
final class ReplicaHandOverTests: XCTestCase {
    func testOnDisconnectOperationsComeBackFromTheirJSONAsTheyWere() throws {
        let operations = [
            OnDisconnectOperation(path: TreePath(keys: ["presence", "me"]), kind: .set(["state": "offline", "at": [".sv": "timestamp"]]), registered: true),
            OnDisconnectOperation(path: TreePath(keys: ["gone"]), kind: .set(.null), registered: true),
            OnDisconnectOperation(path: TreePath(keys: ["counts"]), kind: .update([(TreePath(keys: ["a", "b"]), .int(1)), (TreePath(keys: ["c"]), .string("x"))]),
                                  registered: false),
        ]
        for operation in operations {
            let back = try OnDisconnectOperation(json: operation.json)
            XCTAssertEqual(back.json, operation.json)
            XCTAssertEqual(back.path, operation.path)
            XCTAssertEqual(back.registered, operation.registered)
        }
        XCTAssertThrowsError(try OnDisconnectOperation(json: ["path": "/x", "op": "explode"]))
        XCTAssertThrowsError(try OnDisconnectOperation(json: ["path": "/x", "op": "update", "value": 3]))
    }

    func testAnIdentityTravelsAsABearerTokenThatNamesItAgain() {
        let emulator = AdminCredential(token: nil), secured = AdminCredential(token: "s3cret")
        XCTAssertEqual(emulator.bearerToken(for: .admin), "owner")
        XCTAssertEqual(secured.bearerToken(for: .admin), "s3cret")
        XCTAssertNil(secured.bearerToken(for: .unauthenticated))
        let user = CallIdentity.user(uid: "u1", claims: ["sub": "u1", "user_id": "u1", "role": "editor", "n": 3])
        let token = secured.bearerToken(for: user)!
        XCTAssertEqual(token.split(separator: ".", omittingEmptySubsequences: false).count, 3)
        XCTAssertFalse(token.contains("=") || token.contains("+") || token.contains("/"), "base64url, unpadded")
        XCTAssertEqual(secured.identity(ofToken: token), user)
        XCTAssertEqual(secured.identity(ofToken: secured.bearerToken(for: .admin)!), .admin)
    }
}
