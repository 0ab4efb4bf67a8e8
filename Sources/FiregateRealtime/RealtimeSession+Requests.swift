import FiregateBackend
import FiregateModel

/// The requests a client makes (docs/wire/realtime-database.md, Requests), each answered once.
extension RealtimeSession {
    func answer(_ number: Int64, action: String, body: JSON) async {
        let path = body.member("p")?.stringValue ?? "/"
        // Before the answer: a listen's first data is pushed while it is answered.
        if action == "p" || action == "m" { hooks.timeline?.writeSent("r\(number)", documents: [path]) }
        if action == "q" { hooks.timeline?.listenOpened(path, target: path) }
        do {
            let reply = try await perform(number, action: action, body: body)
            recordAnswer(number, action: action, path: path, error: nil)
            send(reply)
        } catch let error as FiregateError {
            recordAnswer(number, action: action, path: path, error: error)
            send(RealtimeOutbound.reply(number, status: RealtimeStatus.code(for: error), data: .string(error.message)))
        } catch {
            recordAnswer(number, action: action, path: path, error: .internal("\(error)"))
            send(RealtimeOutbound.reply(number, status: "failure", data: .string("\(error)")))
        }
    }

    /// A request's outcome on the connection's timeline (docs/timeline.md).
    private func recordAnswer(_ number: Int64, action: String, path: String, error: FiregateError?) {
        guard let timeline = hooks.timeline else { return }
        switch (action, error) {
        case ("p", nil), ("m", nil): timeline.writeAcknowledged("r\(number)", commitTime: nil)
        case ("p", let error?), ("m", let error?): timeline.writeRejected("r\(number)", error: error, decision: nil)
        case ("q", let error?): timeline.listenClosed(path, reason: error.message)
        case ("n", nil): timeline.listenClosed(path)
        case ("o", nil), ("om", nil): timeline.onDisconnect(registered: true, path: path, op: action == "o" ? "set" : "update")
        case ("oc", nil): timeline.onDisconnect(registered: true, path: path, op: "cancel")
        default: break
        }
    }

    private func ok(_ number: Int64, _ data: JSON = "") -> [UInt8] { RealtimeOutbound.reply(number, status: "ok", data: data) }

    private func perform(_ number: Int64, action: String, body: JSON) async throws -> [UInt8] {
        switch action {
        case "q": return try await listen(number, body)
        case "n": return try await unlisten(number, body)
        case "p": return try await put(number, body)
        case "m": return try await merge(number, body)
        case "o", "om", "oc": return try await onDisconnect(number, action, body)
        case "g": return try await get(number, body)
        case "auth", "gauth", "unauth": return try authenticate(number, action, body)
        // App Check tokens are accepted and not judged; stats only count.
        case "appcheck", "unappeck", "s": return ok(number)
        case "": throw FiregateError.invalidArgument("A request needs an action \"a\".")
        default: throw FiregateError.invalidArgument("Unknown action \"\(action)\".")
        }
    }

    // MARK: Listens

    /// The location and query a listen, unlisten or get names.
    private func target(_ body: JSON) throws -> (key: TreeStreamKey, query: JSON?) {
        let path = try location(body)
        guard let queryJSON = body.member("q"), queryJSON != .null else {
            return (TreeStreamKey(path: path, query: nil, format: .export), nil)
        }
        guard !path.isPriority else { throw TreePath.invalidPathError }
        let query = try RealtimeQueryObject.parse(queryJSON)
        return (TreeStreamKey(path: path, query: query, format: .export), queryJSON)
    }

    private func location(_ body: JSON) throws(FiregateError) -> TreePath {
        guard case .object = body, let text = body.member("p")?.stringValue else {
            throw FiregateError.invalidArgument("The request needs a path \"p\".")
        }
        return try TreePath(validating: text)
    }

    /// `q`: the current value is pushed (the query's window, tagged), then the reply; every
    /// later change follows as pushes. Listening again to the same location and query replaces
    /// the listen (the SDK does on reconnect; the hash `h` is not needed: data is always sent).
    private func listen(_ number: Int64, _ body: JSON) async throws -> [UInt8] {
        let (key, queryJSON) = try target(body)
        if let judge = judge() { try judge.read(key.path, query: key.query, root: try await tree.snapshot(namespace: namespace)) }
        let tag = body.member("t")?.integerLike
        let (generation, replaced) = state.withLock { state -> (Int, TreeStreamSubscription?) in
            state.nextGeneration += 1
            let replaced = state.listens[key]?.subscription
            state.listens[key] = Listen(generation: state.nextGeneration, tag: tag, query: queryJSON)
            return (state.nextGeneration, replaced)
        }
        if let replaced { await tree.unsubscribe(replaced) }
        let subscription: TreeStreamSubscription
        do {
            subscription = try await tree.subscribe(namespace: namespace, key: key, identity: identity) { [weak self] frame in
                self?.deliver(frame, key: key, generation: generation, tag: tag)
            }
        } catch {
            state.withLock { state in if state.listens[key]?.generation == generation { state.listens.removeValue(forKey: key) } }
            throw error
        }
        if subscription.isFinished {
            state.withLock { state in if state.listens[key]?.generation == generation { state.listens.removeValue(forKey: key) } }
            throw FiregateError.resourceExhausted("The data requested exceeds the maximum size that can be accessed with a single request.")
        }
        let kept = state.withLock { state -> Bool in
            guard !state.closed, state.listens[key]?.generation == generation else { return false }
            state.listens[key]?.subscription = subscription
            return true
        }
        if !kept { await tree.unsubscribe(subscription) }
        hooks.listensChanged(listenCount)
        // As production: a query ordered by a child the rules' `.indexOn` does not name is
        // answered with the warning, which the SDK logs for the developer (admin too).
        if let query = key.query, rules?.isUnindexed(query, at: key.path, namespace: namespace) == true {
            return ok(number, ["w": ["no_index"]])
        }
        return ok(number, [:])
    }

    /// `n`: the listen ends; the reply is `ok` whether or not there was one.
    private func unlisten(_ number: Int64, _ body: JSON) async throws -> [UInt8] {
        let (key, _) = try target(body)
        let removed = state.withLock { $0.listens.removeValue(forKey: key) }
        if let subscription = removed?.subscription {
            await tree.unsubscribe(subscription)
            hooks.listensChanged(listenCount)
        }
        return ok(number)
    }

    /// `g`: the value (or the query's result) at the location. The SDK's `get()` asks the
    /// server for `.info/…` too (only listens are served from its local `.info` tree): a socket
    /// that can ask is connected, and the server's clock is its own.
    private func get(_ number: Int64, _ body: JSON) async throws -> [UInt8] {
        if let info = RealtimeSession.info(body.member("p")?.stringValue, authenticated: identity != .unauthenticated) {
            return ok(number, info)
        }
        let (key, _) = try target(body)
        if let judge = judge() { try judge.read(key.path, query: key.query, root: try await tree.snapshot(namespace: namespace)) }
        let node = try await tree.read(namespace: namespace, path: key.path)
        guard let query = key.query else { return RealtimeOutbound.reply(number, value: node) }
        return RealtimeOutbound.reply(number, value: TreeQueryEvaluator.evaluate(query, on: node).node)
    }

    /// The value of a `.info` path (nil: not one): `connected`, `serverTimeOffset`,
    /// `authenticated`, or null for any other child.
    static func info(_ path: String?, authenticated: Bool) -> JSON? {
        guard let path else { return nil }
        let keys = path.split(separator: "/")
        guard keys.first == ".info" else { return nil }
        let info: JSON = ["authenticated": .bool(authenticated), "connected": true, "serverTimeOffset": 0]
        switch keys.count {
        case 1: return info
        case 2: return info.member(String(keys[1])) ?? .null
        default: return .null
        }
    }

    // MARK: Writes

    /// `p`: set (null deletes); with a hash `h`, only if the current value still has it —
    /// else `datastale`, and the SDK reruns its transaction on the data it was pushed.
    private func put(_ number: Int64, _ body: JSON) async throws -> [UInt8] {
        let path = try location(body)
        guard let data = body.member("d") else { throw FiregateError.invalidArgument("A put needs data \"d\" (null deletes).") }
        let hash: String?
        switch body.member("h") {
        case nil, .null?: hash = nil
        case .string(let text)?: hash = text
        default: throw FiregateError.invalidArgument("The hash \"h\" must be a string.")
        }
        let request = TreeWriteRequest(path: path, operation: .set(try TreeWriteValue.prepare(data, at: path)), ifSDKHash: hash)
        if case .conflict = try await tree.write(namespace: namespace, request, judge: judge(), forwardingAs: caller) {
            return RealtimeOutbound.reply(number, status: "datastale", data: "Transaction hash does not match")
        }
        return ok(number)
    }

    /// `m`: a multi-location update; keys are paths relative to `p`.
    private func merge(_ number: Int64, _ body: JSON) async throws -> [UInt8] {
        let path = try location(body)
        guard !path.isPriority else { throw TreePath.invalidPathError }
        let entries = try TreeUpdateEntry.prepare(body.member("d") ?? .null, under: path)
        _ = try await tree.write(namespace: namespace, TreeWriteRequest(path: path, operation: .update(entries)), judge: judge(), forwardingAs: caller)
        return ok(number)
    }

    /// `o` (set; null removes), `om` (update), `oc` (cancel at and below the path): kept for
    /// when this connection closes, validated now so a bad one is refused at once.
    private func onDisconnect(_ number: Int64, _ action: String, _ body: JSON) async throws -> [UInt8] {
        let path = try location(body)
        let data = body.member("d") ?? .null
        switch action {
        case "o":
            let value = try TreeWriteValue.prepare(data, at: path)
            // Judged at registration, and again when it fires (B7).
            if let judge = judge() { try await tree.check(namespace: namespace, TreeWriteRequest(path: path, operation: .set(value)), judge: judge) }
            state.withLock { $0.onDisconnect.add(OnDisconnectOperation(path: path, kind: .set(data), registered: true)) }
        case "om":
            guard !path.isPriority else { throw TreePath.invalidPathError }
            let (entries, prepared) = try TreeUpdateEntry.checkedRelativePaths(of: data, under: path)
            if let judge = judge(), !prepared.isEmpty {
                try await tree.check(namespace: namespace, TreeWriteRequest(path: path, operation: .update(prepared)), judge: judge)
            }
            if !entries.isEmpty {
                state.withLock { $0.onDisconnect.add(OnDisconnectOperation(path: path, kind: .update(entries), registered: true)) }
            }
        default:
            _ = state.withLock { $0.onDisconnect.cancel(at: path) }
        }
        if let changed = hooks.onDisconnectChanged { changed(state.withLock { $0.onDisconnect.operations.filter(\.registered) }) }
        return ok(number)
    }

    // MARK: Identity

    /// `auth` with a JWT (unchecked, as the emulators: its `user_id`/`sub` is the uid) or the
    /// admin's credential, `gauth` with the admin's credential (the admin, or the `authvar` it
    /// overrides with, or nobody for `noauth`) — `owner` there on a server with an admin token
    /// is nobody —, `unauth`.
    private func authenticate(_ number: Int64, _ action: String, _ body: JSON) throws -> [UInt8] {
        let identity: CallIdentity
        var reply: JSON = ""
        switch action {
        case "unauth":
            identity = .unauthenticated
        case "auth":
            let token = body.member("cred")?.stringValue
            if admin.isAdmin(token) {
                identity = .admin
                reply = ["auth": .null, "expires": .null]
                break
            }
            guard let token, case .user(let uid, let claims) = CallIdentity(userToken: token) else {
                return RealtimeOutbound.reply(number, status: "invalid_token", data: "The token is not a JWT naming a user (user_id or sub).")
            }
            identity = .user(uid: uid, claims: claims)
            reply = ["auth": claims, "expires": claims.member("exp") ?? .null]
        default:
            let credential = body.member("cred")?.stringValue
            guard admin.isAdmin(credential) || credential == AdminCredential.emulatorOwner else {
                return RealtimeOutbound.reply(number, status: "invalid_token", data: admin.token == nil
                    ? "The emulator's admin credential is \"owner\"." : "The credential is not the server's admin token.")
            }
            if !admin.isAdmin(credential) {
                // `owner` on a server with an admin token: an ordinary caller, judged by the rules.
                identity = .unauthenticated
            } else if body.member("noauth")?.boolValue == true {
                identity = .unauthenticated
            } else if let override = body.member("authvar"), case .object = override {
                guard let uid = override.member("uid")?.stringValue, !uid.isEmpty else {
                    throw FiregateError.invalidArgument("authvar needs a uid.")
                }
                identity = .user(uid: uid, claims: override)
            } else {
                identity = .admin
            }
            reply = ["auth": identity == .admin ? .null : (identity.uid.map { ["uid": .string($0)] } ?? .null), "expires": .null]
        }
        state.withLock { $0.identity = identity }
        hooks.identityChanged(identity)
        return ok(number, reply)
    }
}

/// The realtime wire's status for an error (the statuses the SDKs know, docs/wire/realtime-database.md, Requests).
public enum RealtimeStatus {
    public static func code(for error: FiregateError) -> String {
        switch error.status {
        case .permissionDenied, .unauthenticated: "permission_denied"
        case .unavailable: "unavailable"
        case .resourceExhausted: "too_big"
        case .aborted: "datastale"
        default: "failure"
        }
    }
}
