import FiregateEdge
import FiregateModel
import Hummingbird

/// The calls that a tab of a shared web persistence answers itself rather than its engine: its
/// network switch, visibility, lease refresh and lifecycle. Nil means "the engine's call".
struct TabRoutes {
    let clients: EdgeClients
    let persistence: SharedPersistence
    let tab: String

    /// The tab's own answer to `:verb` or to a subpath; nil when the engine answers.
    func respond(verb: String?, subpath: String, _ request: Request) async throws(FiregateError) -> Response? {
        if let verb { return try await control(verb, request) }
        return try await subresource(subpath, request)
    }

    /// POST /clients/{tab}:verb
    func control(_ verb: String, _ request: Request) async throws(FiregateError) -> Response? {
        guard request.method == .post else { return nil }
        switch verb {
        case "disableNetwork", "enableNetwork":
            await persistence.setNetwork(tab, enabled: verb == "enableNetwork")
            return JSONResponse.make(await clients.state(of: tab))
        case "setVisibility":
            let body = try await request.jsonObjectBody()
            guard let visible = body["visible"]?.boolValue else { throw .invalidArgument("setVisibility needs {\"visible\": true|false}.") }
            await persistence.setVisibility(tab, visible: visible)
        case "claimPrimary":
            await persistence.claimPrimary(tab)
        case "freeze", "resume":
            await persistence.setFrozen(tab, verb == "freeze")
        case "runTimer":
            let timers = try SDKTimer.parse(body: try await request.jsonObjectBody())
            var ran: [JSON] = []
            if timers.contains(.clientMetadataRefresh) {
                await persistence.refresh(tab)
                ran.append(.string(SDKTimer.clientMetadataRefresh.rawValue))
            }
            // The tab's own retry first (what its faults held), then the engine's, whose
            // operations are the primary's.
            var retried = false
            if timers.contains(.asyncQueueRetry) { retried = await persistence.retry(tab) }
            let others = timers.filter { $0 != .clientMetadataRefresh && ($0 != .asyncQueueRetry || persistence.isPrimary(tab)) }
            var engineRan = others.isEmpty ? [] : try await persistence.engine.runTimers(others)
            if retried, !engineRan.contains(SDKTimer.asyncQueueRetry.rawValue) { engineRan.append(SDKTimer.asyncQueueRetry.rawValue) }
            ran += engineRan.map(JSON.string)
            return JSONResponse.make(["ran": .array(ran)])
        case "restart":
            throw .clientState("A tab restarts by closing (:terminate or DELETE) and opening again (PUT with sharedWith); its persistence stays.")
        case "clearPersistence":
            throw .clientState("Persistence can only be cleared before a Firestore instance is initialized or after it is terminated.")
        case "terminate":
            _ = await clients.closeTab(tab, remember: true)
            return JSONResponse.make([:])
        default:
            return nil
        }
        return JSONResponse.make(persistence.tabState(tab))
    }

    /// /clients/{tab}/network: `online` is the tab's own switch; latency and the rest are the
    /// device's, shared with the engine.
    func subresource(_ subpath: String, _ request: Request) async throws(FiregateError) -> Response? {
        if request.method == .post, subpath == "/watch" || subpath == "/gates:releaseWrite", !persistence.isPrimary(tab) {
            // A secondary tab has no watch or write stream: what a script sends it is lost, as
            // a message on the stream of a tab that lost its lease is.
            return JSONResponse.make(["delivered": false, "reason": .string("Tab \(tab) is not primary: it has no watch or write stream.")])
        }
        if subpath == "/faults" {
            switch request.method {
            case .put: return JSONResponse.make(try await persistence.setFaults(tab, try await request.jsonObjectBody()))
            case .get: return JSONResponse.make(persistence.faultsJSON(tab))
            default: return nil
            }
        }
        if request.method == .get, subpath.hasPrefix("/pendingWrites/"), let id = Int64(subpath.dropFirst("/pendingWrites/".count)),
           persistence.holdsWrite(tab, id), await persistence.engine.writeState(id) != nil {
            // The tab could not read this write's outcome yet (its faults): pending to it.
            return JSONResponse.make(EdgeClient.render(id, .pending))
        }
        if subpath == "/auth" {
            switch request.method {
            case .put: return JSONResponse.make(try await persistence.setAuth(tab, try await request.jsonObjectBody()))
            case .get: return JSONResponse.make(await persistence.auth(tab))
            default: return nil
            }
        }
        guard subpath == "/network" else { return nil }
        switch request.method {
        case .put:
            var body = try await request.jsonObjectBody()
            if case .object(var members) = body, let online = members.removeValue(forKey: "online"), online != .null {
                guard let enabled = online.boolValue else { throw .invalidArgument("online must be a boolean.") }
                await persistence.setNetwork(tab, enabled: enabled)
                body = .object(members)
            }
            try await persistence.engine.setNetwork(body)
            return JSONResponse.make(await network())
        case .get:
            return JSONResponse.make(await network())
        default:
            return nil
        }
    }

    private func network() async -> JSON {
        guard case .object(var members) = await persistence.engine.networkJSON() else { return .null }
        members["online"] = persistence.tabState(tab)["networkEnabled"]
        return .object(members)
    }
}
