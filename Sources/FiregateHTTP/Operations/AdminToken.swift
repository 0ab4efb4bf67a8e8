import FiregateBackend
import FiregateModel
import Hummingbird

/// `--admin-token`: when set, `/emulator/…` and the client control routes need it, as
/// `Authorization: Bearer <token>` or `?admin_token=<token>` (for EventSource, which cannot
/// set headers). Data routes, `/healthz`, `/metrics` and the dashboard's files never do.
struct AdminToken: Sendable {
    let token: String?

    /// Nil when the request may go on; otherwise the 401 to answer.
    func check(_ request: Request) -> FiregateError? {
        guard let token, AdminToken.isProtected(request.uri.path) else { return nil }
        // A replica's forwarded tree write is a data write: its route demands the cluster secret.
        if request.uri.path == OwnerTreeWriteSender.uri, request.headers[OwnerForwarding.forwardedBy] != nil { return nil }
        var presented: String?
        if let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") {
            presented = String(header.dropFirst("bearer ".count)).trimmingCharacters(in: .whitespaces)
        } else {
            do {
                presented = try request.queryItems().first { $0.name == "admin_token" }?.value
            } catch {
                return error
            }
        }
        guard let presented else {
            return FiregateError(.unauthenticated, "This route needs the admin token: send Authorization: Bearer <token> or ?admin_token=<token>.")
        }
        guard AdminCredential(token: token).isAdmin(presented) else { return FiregateError(.unauthenticated, "The admin token is wrong.") }
        return nil
    }

    /// Operations under `/emulator/` and `/clients…` routes that control clients rather than
    /// read or write data through them.
    static func isProtected(_ path: String) -> Bool {
        if path.hasPrefix("/emulator/") { return true }
        guard path == "/clients" || path.hasPrefix("/clients/") else { return false }
        let rest = path.dropFirst("/clients/".count)
        // The SDK's loadBundle is a call the app makes, not a control.
        guard let slash = rest.firstIndex(of: "/") else { return !rest.hasSuffix(":loadBundle") }
        let subpath = rest[slash...]
        if subpath.hasPrefix("/v1/") || subpath.hasSuffix(".json") || subpath.hasPrefix("/namedQueries/") { return false }
        return !["/onDisconnect", "/keepSynced", "/transaction", "/auth", "/snapshotsInSync"].contains(subpath)
    }
}
