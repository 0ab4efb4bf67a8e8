import FiregateBackend
import FiregateModel
import HTTPTypes
import Hummingbird

/// The Realtime Database REST and streaming surface: `/{path}.json` with GET (and streaming
/// GET), PUT, POST, PATCH and DELETE.
struct TreeRoutes: Sendable {
    let backend: Backend
    /// On replicas: writes go to the namespace's owner.
    var forwarding: OwnerForwarding?

    func respond(to request: Request, context: BasicRequestContext) async -> Response {
        if request.uri.path == "/.settings/rules.json" {
            return await RulesRoutes.tree(request, rules: backend.rules, defaultNamespace: backend.defaultProject)
        }
        var judge: TreeRulesJudge?
        var response: Response
        do {
            let call = try TreeRequest(request, defaultNamespace: backend.defaultProject)
            if let forwarding, ![.get, .options].contains(call.method),
               let owner = try forwarding.target(.tree(namespace: call.namespace), headers: request.headers) {
                var request = request
                let body: ByteBuffer
                do { body = try await request.collectBody(upTo: TreeLimits.maxWriteBytes) } catch { throw TreeLimits.writeTooBig }
                return try await forwarding.forward(request, body: body, to: owner)
            }
            if call.method != .options, backend.rules.isActive, backend.rules.realtime(namespace: call.namespace) != nil {
                let token = CallIdentity.bearerToken(request.headers[.authorization]) ?? call.authToken
                let caller = try backend.rules.caller(token: token, judged: true, surface: call.wantsStream ? "sse" : "rest")
                judge = backend.rules.treeJudge(call.namespace, caller: caller)
            }
            switch call.method {
            case .options: response = TreeResponses.preflight()
            case .get: response = call.wantsStream ? try await stream(call, request, judge) : try await get(call, judge)
            case .put: response = try await put(call, body: try await body(request), judge)
            case .post: response = try await post(call, body: try await body(request), judge)
            case .patch: response = try await patch(call, body: try await body(request), judge)
            case .delete: response = try await delete(call, judge)
            }
            forwarding?.mark(&response, answering: request.headers, scope: .tree(namespace: call.namespace))
        } catch {
            response = TreeResponses.error(ErrorResponse.normalize(error))
        }
        if let judge { response.headers.rulesDecisions(judge.decisionIDs) }
        return response
    }

    var tree: TreeBackend { backend.tree }

    func body(_ request: Request) async throws -> JSON { try await TreeRoutes.body(request) }

    /// The request body as JSON; a missing or unparsable body is production's 400.
    static func body(_ request: Request) async throws -> JSON {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: TreeLimits.maxWriteBytes)
        } catch {
            throw TreeLimits.writeTooBig
        }
        do {
            return try JSONParser.parse(buffer.readableBytesView)
        } catch {
            throw FiregateError.invalidArgument("Invalid data; couldn't parse JSON object, array, or value.")
        }
    }

    func get(_ call: TreeRequest, _ judge: TreeRulesJudge?) async throws -> Response {
        if let judge { try judge.read(call.path, query: call.query, root: try await tree.snapshot(namespace: call.namespace)) }
        let plain = call.query == nil && !call.shallow && call.format == .plain && call.print != .pretty
        if plain && !call.wantsETag && call.ifNoneMatch == nil {
            // The hot path: a bare read, answered from the encoded cache.
            return TreeResponses.json(try await tree.readEncoded(namespace: call.namespace, path: call.path), for: call)
        }
        let node = try await tree.read(namespace: call.namespace, path: call.path)
        let style = TreeResponses.style(call)
        let bytes: [UInt8]
        let value: TreeNode
        if let query = call.query {
            let result = TreeQueryEvaluator.evaluate(query, on: node)
            value = result.node
            bytes = result.bytes(format: call.format, style: style)
        } else if call.shallow {
            value = node
            bytes = TreeNodeWriter.shallowBytes(node, style: style)
        } else {
            value = node
            bytes = TreeNodeWriter.bytes(node, format: call.format, style: style)
        }
        var etag: String?
        if call.wantsETag || call.ifNoneMatch != nil {
            let current = TreeETag.of(value)
            if let expected = call.ifNoneMatch, expected == current { return TreeResponses.notModified(etag: current) }
            etag = current
        }
        return TreeResponses.json(bytes, for: call, etag: etag)
    }

    func stream(_ call: TreeRequest, _ request: Request, _ judge: TreeRulesJudge?) async throws -> Response {
        if let judge { try judge.read(call.path, query: call.query, root: try await tree.snapshot(namespace: call.namespace)) }
        let key = TreeStreamKey(path: call.path, query: call.query, format: call.format)
        let identity = try backend.rules.caller(token: CallIdentity.bearerToken(request.headers[.authorization]) ?? call.authToken, judged: judge != nil,
                                                surface: "sse").identity
        let subscription = try await tree.subscribe(namespace: call.namespace, key: key, identity: identity)
        return TreeEventStreamResponse.make(subscription, tree: tree, request: request)
    }

    func put(_ call: TreeRequest, body: JSON, _ judge: TreeRulesJudge?) async throws -> Response {
        let value = try TreeWriteValue.prepare(body, at: call.path)
        let request = TreeWriteRequest(path: call.path, operation: .set(value), ifMatch: call.ifMatch, wantsETag: call.wantsETag)
        switch try await tree.write(namespace: call.namespace, request, judge: judge) {
        case .conflict(let current, let etag):
            return TreeResponses.conflict(current, etag: etag, for: call)
        case .written(let result):
            let echo = TreeNodeWriter.bytes(result.value, format: call.format, style: TreeResponses.style(call))
            return TreeResponses.json(echo, for: call, etag: result.etag)
        }
    }

    func post(_ call: TreeRequest, body: JSON, _ judge: TreeRulesJudge?) async throws -> Response {
        guard !call.path.isPriority else { throw TreePath.invalidPathError }
        let value = try TreeWriteValue.prepare(body, at: call.path.appending("-"))
        let request = TreeWriteRequest(path: call.path, operation: .push(value), wantsETag: call.wantsETag)
        guard case .written(let result) = try await tree.write(namespace: call.namespace, request, judge: judge), let key = result.pushKey else {
            throw FiregateError.internal("Push did not produce a key.")
        }
        let reply = JSONWriter.bytes(["name": .string(key)], style: TreeResponses.style(call))
        return TreeResponses.json(reply, for: call, etag: result.etag)
    }

    /// A PATCH body's entries: relative paths (none empty) and their values, unvalidated.
    static func patchEntries(_ body: JSON) throws(FiregateError) -> [(TreePath, JSON)] {
        guard case .object = body else {
            throw FiregateError.invalidArgument("Invalid data; PATCH requires a JSON object whose keys are the children or paths to update.")
        }
        return try TreeUpdateEntry.relativePaths(of: body)
    }

    func patch(_ call: TreeRequest, body: JSON, _ judge: TreeRulesJudge?) async throws -> Response {
        guard !call.path.isPriority else { throw TreePath.invalidPathError }
        var entries: [TreeUpdateEntry] = []
        for (relative, json) in try TreeRoutes.patchEntries(body) {
            entries.append(TreeUpdateEntry(path: relative, value: try TreeWriteValue.prepare(json, at: call.path.appending(relative))))
        }
        let request = TreeWriteRequest(path: call.path, operation: .update(entries))
        guard case .written(let result) = try await tree.write(namespace: call.namespace, request, judge: judge) else {
            throw FiregateError.internal("Update reported a conflict.")
        }
        var members: [(String, TreeNodeWriter.Member)] = result.entries.map { ($0.path.joined, .node($0.node)) }
        var echo: [UInt8] = []
        TreeNodeWriter.writeObject(&members, format: call.format, style: TreeResponses.style(call), indent: 0, into: &echo)
        return TreeResponses.json(echo, for: call)
    }

    func delete(_ call: TreeRequest, _ judge: TreeRulesJudge?) async throws -> Response {
        let request = TreeWriteRequest(path: call.path, operation: .set(.node(.empty)), ifMatch: call.ifMatch, wantsETag: call.wantsETag)
        switch try await tree.write(namespace: call.namespace, request, judge: judge) {
        case .conflict(let current, let etag):
            return TreeResponses.conflict(current, etag: etag, for: call)
        case .written(let result):
            return TreeResponses.json(Array("null".utf8), for: call, etag: result.etag)
        }
    }
}
