@testable import FiregateBackend
import FiregateModel
import XCTest

/// Who is the admin: the emulators' `owner` on a server without an admin token, the token alone
/// on one with it — for bare tokens, bearer headers and the rules' callers alike.
final class AdminCredentialTests: XCTestCase {
    private let userJWT = "eyJhbGciOiJub25lIn0." + "eyJzdWIiOiJhbGljZSIsInVzZXJfaWQiOiJhbGljZSJ9" + "."

    func testWithoutAnAdminTokenOwnerIsTheAdmin() {
        let admin = AdminCredential(token: nil)
        XCTAssertTrue(admin.isAdmin("owner"))
        XCTAssertFalse(admin.isAdmin("Owner"))
        XCTAssertFalse(admin.isAdmin(nil))
        XCTAssertEqual(admin.identity(authorization: "Bearer owner"), .admin)
        XCTAssertEqual(admin.identity(authorization: "bearer  owner "), .admin)
        XCTAssertEqual(admin.identity(authorization: nil), .unauthenticated)
        XCTAssertEqual(admin.identity(authorization: "Basic owner"), .unauthenticated)
        XCTAssertEqual(admin.identity(ofToken: userJWT).uid, "alice")
    }

    func testWithAnAdminTokenOnlyTheTokenIsTheAdmin() {
        let admin = AdminCredential(token: "s3cret")
        XCTAssertTrue(admin.isAdmin("s3cret"))
        XCTAssertFalse(admin.isAdmin("owner"))
        XCTAssertFalse(admin.isAdmin("s3cre"))
        XCTAssertFalse(admin.isAdmin("s3cret2"))
        XCTAssertEqual(admin.identity(authorization: "Bearer owner"), .unauthenticated)
        XCTAssertEqual(admin.identity(authorization: "Bearer s3cret"), .admin)
        XCTAssertEqual(admin.identity(ofToken: userJWT).uid, "alice")
        XCTAssertEqual(admin.bearer, "s3cret")
    }

    func testTheRulesCallerFollowsTheServersAdmin() throws {
        let rules = SecurityRules(clock: ServerClock())
        XCTAssertEqual(try rules.caller(token: "owner", judged: true, surface: "rest").identity, .admin)
        rules.trust(adminToken: "s3cret")
        // The token cache must not keep what `owner` was before the token was set.
        XCTAssertEqual(try rules.caller(token: "owner", judged: true, surface: "rest").identity, .unauthenticated)
        XCTAssertEqual(try rules.caller(token: "s3cret", judged: true, surface: "grpc").identity, .admin)
        XCTAssertEqual(try rules.caller(token: userJWT, judged: true, surface: "rest").identity.uid, "alice")
        XCTAssertThrowsError(try rules.caller(token: "garbage", judged: true, surface: "rest"))
        XCTAssertEqual(try rules.caller(token: "garbage", judged: false, surface: "rest").identity, .unauthenticated)
        rules.trust(adminToken: nil)
        XCTAssertEqual(try rules.caller(token: "owner", judged: true, surface: "rest").identity, .admin)
    }
}
