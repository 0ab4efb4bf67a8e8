import FiregateModel
import Hummingbird

/// `/emulator/v1/connections…` (docs/architecture.md, Real SDK connections): list the real SDK connections, switch them
/// offline or slow by a match, drop one once, revoke a socket's credential.
struct ConnectionRoutes: Sendable {
    let registry: ConnectionRegistry

    /// `rest` is the path after `/emulator/v1/connections`, split and decoded.
    func respond(_ request: Request, rest: ArraySlice<String>) async throws(FiregateError) -> Response {
        switch (request.method, rest.count, rest.first) {
        case (.get, 0, _):
            return JSONResponse.make(["connections": .array(registry.connections.map(\.json))])
        case (.get, 1, "network"?):
            return JSONResponse.make(["switches": .array(registry.switches.map(\.json))])
        case (.put, 1, "network"?):
            guard let body = try await request.jsonBody(), case .object = body else {
                throw .invalidArgument("The body is {\"match\":{…},\"online\":true|false,\"latencyMs\":0}.")
            }
            let networkSwitch = try NetworkSwitch(json: body)
            let dropped = registry.set(networkSwitch)
            return JSONResponse.make([
                "switches": .array(registry.switches.map(\.json)), "dropped": .array(dropped.map(JSON.string)),
            ])
        case (.post, 1, let name?) where name.hasSuffix(":revokeAuth"):
            let id = String(name.dropLast(":revokeAuth".count))
            let body = try await request.jsonBody() ?? [:]
            guard case .object = body else { throw .invalidArgument("The body is {\"status\":\"invalid_token\",\"reason\":\"…\"} (both optional).") }
            let status = body.member("status")?.stringValue ?? "invalid_token"
            let reason = body.member("reason")?.stringValue ?? "The credential was revoked by the test (Firegate connections :revokeAuth)."
            try registry.revokeAuth(id, status: status, reason: reason)
            return JSONResponse.make([:])
        case (.post, 1, let name?) where name.hasSuffix(":drop"):
            let id = String(name.dropLast(":drop".count))
            guard registry.drop(id) else { throw .notFound("No connection \"\(id)\".") }
            return JSONResponse.make([:])
        case (.get, 1, let id?):
            guard let info = registry.connection(id) else { throw .notFound("No connection \"\(id)\".") }
            return JSONResponse.make(info.json)
        default:
            throw OperationRoutes.noRoute(request)
        }
    }
}
